const http = require('http'), cp = require('child_process'), fs = require('fs'), os = require('os');
const { Worker } = require('worker_threads');
let fails = 0;
function check(ok, what) { console.log((ok ? 'ok ' : 'FAIL ') + what); if (!ok) fails++; }
(async () => {
  check(os.cpus().length >= 1, 'cpus ' + os.cpus().length);
  fs.writeFileSync('/tmp/n.txt', 'node\n'); check(fs.readFileSync('/tmp/n.txt', 'utf8') === 'node\n', 'fs sync');
  const d = await fs.promises.readFile('/tmp/n.txt', 'utf8'); check(d === 'node\n', 'fs promises (libuv thread pool)');
  const r = cp.spawnSync('/bin/sh', ['-c', 'echo $((6*7)); exit 3']); check(r.stdout.toString().trim() === '42' && r.status === 3, 'spawnSync');
  await new Promise(res => { const c = cp.spawn('/bin/sh', ['-c', 'cat']); let o = ''; c.stdout.on('data', x => o += x); c.on('close', code => { check(o === 'piped' && code === 0, 'spawn with pipes'); res(); }); c.stdin.end('piped'); });
  await new Promise(res => { const w = new Worker('const {parentPort}=require("worker_threads"); let s=0; for (let i=0;i<1e6;i++) s+=i; parentPort.postMessage(s);', { eval: true }); w.on('message', m => { check(m === 499999500000, 'worker thread ' + m); res(); }); });
  await new Promise(res => { const srv = http.createServer((q, s) => s.end('hello ' + q.url)).listen(0, '127.0.0.1', () => {
      http.get({ host: '127.0.0.1', port: srv.address().port, path: '/x' }, rs => { let b = ''; rs.on('data', x => b += x); rs.on('end', () => { check(b === 'hello /x', 'http loopback: ' + b); srv.close(); res(); }); }); }); });
  const t0 = Date.now(); await new Promise(r => setTimeout(r, 200)); const ms = Date.now() - t0; check(ms >= 199 && ms < 5000, 'timer 200 ms took ' + ms);
  console.log(fails ? 'SMOKE FAIL ' + fails : 'SMOKE PASS'); process.exit(fails ? 1 : 0);
})();
