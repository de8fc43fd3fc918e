#!/usr/bin/python3
"""%maven against a local repository server (127.0.0.1) that serves a tampered artifact: the resolution fails and
nothing is loaded; a genuine artifact loads; the working folder is private and is removed at shutdown; the cell names
the repositories it uses (issue 30, point 2; docs/reliability.md; probes K8/K10 of the 2026-12-05 reliability report).

    JUPYTER_PATH=... /usr/bin/python3 tools/kernel_maven_test.py [KERNEL_NAME]   (default: ane4j)

Needs mvn on PATH with maven-dependency-plugin 3.8.1 in ~/.m2 (the build puts it there), a JDK's javac next to the
kernelspec's java, and Debian's python3-jupyter-client. No traffic leaves the machine: Maven runs with a settings.xml
whose only mirror is the local server. Exit status 0 when every check passes.
"""
import hashlib
import http.server
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
import zipfile

from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import start_new_kernel

KERNEL = sys.argv[1] if len(sys.argv) > 1 else "ane4j"
from kernel_client import check, finish, run, of


def compile_class(javac, work, name, marker):
    src = os.path.join(work, "src", "evil")
    os.makedirs(src, exist_ok=True)
    with open(os.path.join(src, name + ".java"), "w") as f:
        f.write(f'package evil; public class {name} {{ static {{ try {{ java.nio.file.Files.writeString('
                f'java.nio.file.Path.of("{marker}"), "ran"); }} catch (Exception e) {{ throw new RuntimeException(e); }} }} '
                f'public static String hello() {{ return "hello from {name}"; }} }}')
    out = os.path.join(work, "classes")
    subprocess.run([javac, "--release", "17", "-d", out, os.path.join(src, name + ".java")], check=True)
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\n")
        z.write(os.path.join(out, "evil", name + ".class"), f"evil/{name}.class")
    return buf.getvalue()


def publish(repo, group, artifact, version, jar, good_checksums):
    d = os.path.join(repo, *group.split("."), artifact, version)
    os.makedirs(d, exist_ok=True)
    base = os.path.join(d, f"{artifact}-{version}")
    pom = (f'<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion><groupId>{group}</groupId>'
           f'<artifactId>{artifact}</artifactId><version>{version}</version></project>').encode()
    for ext, data in ((".pom", pom), (".jar", jar)):
        with open(base + ext, "wb") as f:
            f.write(data)
        sha1 = hashlib.sha1(data).hexdigest() if (good_checksums or ext == ".pom") else "0" * 40
        md5 = hashlib.md5(data).hexdigest() if (good_checksums or ext == ".pom") else "0" * 32
        with open(base + ext + ".sha1", "w") as f:
            f.write(sha1)
        with open(base + ext + ".md5", "w") as f:
            f.write(md5)


def main():
    spec = KernelSpecManager().get_kernel_spec(KERNEL)
    javac = os.path.join(os.path.dirname(spec.argv[0]), "javac")
    work = tempfile.mkdtemp(prefix="ane4j-maven-test-")
    repo = os.path.join(work, "repo")
    tag = uuid.uuid4().hex[:8]   # fresh versions: nothing of an earlier run is in ~/.m2
    evil_marker = os.path.join(work, "evil-ran")
    good_marker = os.path.join(work, "good-ran")
    publish(repo, "org.example", "evil", "1.0-" + tag, compile_class(javac, work, "Evil", evil_marker), good_checksums=False)
    publish(repo, "org.example", "good", "1.0-" + tag, compile_class(javac, work, "Good", good_marker), good_checksums=True)

    handler = lambda *a, **k: http.server.SimpleHTTPRequestHandler(*a, directory=work, **k)
    http.server.SimpleHTTPRequestHandler.log_message = lambda *a: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/repo/"
    settings = os.path.join(work, "settings.xml")
    with open(settings, "w") as f:
        # the mirror is called "central" so the plugins already in ~/.m2 (downloaded from central) stay usable
        f.write(f'<settings><mirrors><mirror><id>central</id><mirrorOf>*</mirrorOf><url>{url}</url></mirror></mirrors></settings>')
    wrapper = os.path.join(work, "mvn-local.sh")
    with open(wrapper, "w") as f:
        f.write(f'#!/bin/sh\nexec mvn -s "{settings}" "$@"\n')
    os.chmod(wrapper, 0o755)

    env = dict(os.environ, ANE4J_MVN=wrapper, JAVA_TOOL_OPTIONS=f"-Djava.io.tmpdir={work}")
    km, kc = start_new_kernel(kernel_name=KERNEL, startup_timeout=60, env=env)
    try:
        def text(msgs):
            return "".join(s["text"] for s in of(msgs, "stream")) + "".join(e["evalue"] for e in of(msgs, "error"))

        reply, msgs = run(kc, f"%mavenRepo http://example.org/m2/", timeout=60)
        check(reply["status"] == "error" and "plain http" in text(msgs), "%mavenRepo refuses plain http to another host")
        reply, msgs = run(kc, f"%mavenRepo {url}", timeout=60)
        check(reply["status"] == "ok", "%mavenRepo accepts http://127.0.0.1")

        reply, msgs = run(kc, f"%maven org.example:evil:1.0-{tag}", timeout=300)
        out = text(msgs)
        print(out, flush=True)
        check(reply["status"] == "error", "%maven of an artifact with a wrong .sha1/.md5 fails")
        check("does not match its published checksum" in out and "nothing was loaded" in out, "the error names the checksum")
        check("repositories: Maven Central" in out and url in out, "the cell names the repositories it uses")
        reply, msgs = run(kc, 'Class.forName("evil.Evil")', timeout=60)
        check(reply["status"] == "error", "the tampered class is not on the class path")
        check(not os.path.exists(evil_marker), "the tampered class's static initialiser did not run")

        reply, msgs = run(kc, f"%maven org.example:good:1.0-{tag}", timeout=300)
        out = text(msgs)
        print(out, flush=True)
        check(reply["status"] == "ok" and "added 1 jar" in out, "%maven of a genuine artifact adds its jar")
        check("downloaded from central (http://127.0.0.1" in out, "the cell says where the files came from")
        reply, msgs = run(kc, "evil.Good.hello()", timeout=60)
        res = of(msgs, "execute_result")
        check(res and "hello from Good" in res[0]["data"]["text/plain"], "the genuine class runs")

        dirs = [d for d in os.listdir(work) if d.startswith("ane4j-maven-") and d != os.path.basename(work)]
        check(len(dirs) == 1, f"one working folder in the kernel's temporary directory ({dirs})")
        if dirs:
            st = os.stat(os.path.join(work, dirs[0]))
            check(st.st_mode & 0o777 == 0o700, f"the working folder is private (mode {oct(st.st_mode & 0o777)})")
            check(dirs[0] != f"ane4j-maven-{km.provisioner.process.pid}", "the working folder's name is random, not the pid")
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)
        left = [d for d in os.listdir(work) if d.startswith("ane4j-maven-")]
        check(not left, f"the working folder is removed at shutdown (left: {left})")
        server.shutdown()
        shutil.rmtree(work, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
