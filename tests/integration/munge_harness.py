"""A private munged (its own key and socket under a test's directory), as the
Slurm tests run one: credentials made with `munge -S SOCKET` or by jobscope
with JOBSCOPE_MUNGE_SOCKET decode only there.  Needs root, the Debian package
munge and its user."""
import os
import pwd
import shutil
import socket
import subprocess

from harness import wait_for

SBIN_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


class Munged:
    def __init__(self, wd):
        self.dir = wd.join("munge")
        self.socket = os.path.join(self.dir, "munge.sock")
        os.chmod(wd.path, 0o755)  # the munge user and callers of any uid traverse it
        os.makedirs(self.dir)
        pw = pwd.getpwnam("munge")
        os.chown(self.dir, pw.pw_uid, pw.pw_gid)
        os.chmod(self.dir, 0o755)  # munged refuses a socket dir that is not world-x
        key = os.path.join(self.dir, "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chown(key, pw.pw_uid, pw.pw_gid)
        os.chmod(key, 0o400)
        self.log = os.path.join(self.dir, "munged.log")
        self.proc = subprocess.Popen(
            [shutil.which("munged", path=SBIN_PATH), "--foreground", "--socket=" + self.socket,
             "--key-file=" + key, "--pid-file=" + os.path.join(self.dir, "munged.pid"),
             "--log-file=" + self.log, "--seed-file=" + os.path.join(self.dir, "seed")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            user=pw.pw_uid, group=pw.pw_gid, extra_groups=[], cwd=self.dir,
            start_new_session=True)
        wait_for(self._ready, timeout=15, what="munged's socket")

    def _ready(self):
        if self.proc.poll() is not None:
            raise AssertionError("munged exited: %s" % open(self.log).read())
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(self.socket)
            return True
        except OSError:
            return False
        finally:
            s.close()

    def cred(self, user=None):
        """A fresh credential of user (a name; None: this process's)."""
        argv = ["munge", "-n", "-S", self.socket]
        if user:
            argv = ["runuser", "-u", user, "--"] + argv
        return subprocess.run(argv, capture_output=True, text=True, check=True,
                              timeout=30).stdout.strip()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=30)
