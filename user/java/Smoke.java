import java.io.*;
import java.net.*;
import java.nio.file.*;
import java.util.*;
import java.util.concurrent.*;
import java.util.concurrent.atomic.*;

public class Smoke {
    static void check(boolean ok, String what) {
        System.out.println((ok ? "ok " : "FAIL ") + what);
        if (!ok) failures++;
    }
    static int failures = 0;

    public static void main(String[] args) throws Exception {
        int cpus = Runtime.getRuntime().availableProcessors();
        check(cpus >= 1, "availableProcessors " + cpus);
        // threads and a pool
        ExecutorService pool = Executors.newFixedThreadPool(8);
        AtomicLong sum = new AtomicLong();
        List<Future<?>> fs = new ArrayList<>();
        for (int i = 0; i < 64; i++) {
            final int k = i;
            fs.add(pool.submit(() -> { long s = 0; for (int j = 0; j < 100000; j++) s += j % (k + 1); sum.addAndGet(s); }));
        }
        for (Future<?> f : fs) f.get();
        pool.shutdown();
        check(pool.awaitTermination(60, TimeUnit.SECONDS), "thread pool of 8 ran 64 tasks, sum " + sum.get());
        // garbage collection under allocation
        long made = 0;
        for (int i = 0; i < 200; i++) { byte[] b = new byte[1 << 20]; made += b.length; }
        System.gc();
        check(made == 200L << 20, "allocated 200 MiB through the GC");
        // files
        Path p = Files.createTempFile("smoke", ".txt");
        Files.writeString(p, "hello from java\n");
        check(Files.readString(p).equals("hello from java\n"), "file write/read " + p);
        Files.delete(p);
        // a child process
        Process pr = new ProcessBuilder("/bin/sh", "-c", "echo child $((6*7)); exit 3").redirectErrorStream(true).start();
        String out = new String(pr.getInputStream().readAllBytes()).trim();
        int rc = pr.waitFor();
        check(out.equals("child 42") && rc == 3, "ProcessBuilder: '" + out + "' exit " + rc);
        // loopback TCP
        try (ServerSocket ss = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            int port = ss.getLocalPort();
            Thread srv = new Thread(() -> {
                try (Socket c = ss.accept()) {
                    BufferedReader r = new BufferedReader(new InputStreamReader(c.getInputStream()));
                    PrintWriter w = new PrintWriter(c.getOutputStream(), true);
                    w.println("echo:" + r.readLine());
                } catch (IOException e) { e.printStackTrace(); }
            });
            srv.start();
            try (Socket c = new Socket(InetAddress.getLoopbackAddress(), port)) {
                PrintWriter w = new PrintWriter(c.getOutputStream(), true);
                BufferedReader r = new BufferedReader(new InputStreamReader(c.getInputStream()));
                w.println("ping");
                String line = r.readLine();
                check("echo:ping".equals(line), "TCP loopback echo: " + line);
            }
            srv.join();
        }
        // timed waits
        long t0 = System.nanoTime();
        Thread.sleep(200);
        long ms = (System.nanoTime() - t0) / 1000000;
        check(ms >= 200 && ms < 5000, "sleep 200 ms took " + ms);
        CompletableFuture<String> cf = CompletableFuture.supplyAsync(() -> "async").thenApply(s -> s + "!");
        check(cf.get(10, TimeUnit.SECONDS).equals("async!"), "CompletableFuture");
        System.out.println(failures == 0 ? "SMOKE PASS" : "SMOKE FAIL " + failures);
        System.exit(failures == 0 ? 0 : 1);
    }
}
