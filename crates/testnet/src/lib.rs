//! Test support for Vigil's network tests (a dev-dependency only): a
//! network namespace created by the test and deleted on drop, IPv6 off
//! and loopback up in it; threads that enter it (sockets, rings and
//! queues created there belong to it); commands that must succeed; and
//! dropping one capability from the calling thread, to test permission
//! errors. Tests using it only ever send traffic inside their namespaces.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::Command;

/// Fails (not skips) when not root, saying what `what` needs root for.
pub fn require_root(what: &str) {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(euid, 0, "{what} must run as root");
}

/// Runs `prog args`, panicking with its stderr unless it succeeds.
pub fn run(prog: &str, args: &[&str]) {
    let out = Command::new(prog).args(args).output().unwrap_or_else(|e| {
        panic!(
            "cannot run `{prog} {}`: {e} (scripts/setup.sh installs it)",
            args.join(" ")
        )
    });
    assert!(
        out.status.success(),
        "`{prog} {}` failed: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// One network namespace, deleted on drop.
pub struct Ns {
    pub name: String,
}

impl Ns {
    /// Creates namespace `name` (an old one of that name is removed
    /// first), with IPv6 off (no router solicitations or link-local
    /// addresses) and loopback up.
    pub fn new(name: String) -> Ns {
        let _ = Command::new("ip").args(["netns", "del", &name]).output();
        run("ip", &["netns", "add", &name]);
        let ns = Ns { name };
        // Absent when the kernel has no IPv6: fine.
        let _ = Command::new("ip")
            .args(["netns", "exec", &ns.name, "sysctl", "-qw"])
            .args([
                "net.ipv6.conf.all.disable_ipv6=1",
                "net.ipv6.conf.default.disable_ipv6=1",
            ])
            .output();
        ns.ip(&["link", "set", "lo", "up"]);
        ns
    }

    /// `ip -n NAME args`.
    pub fn ip(&self, args: &[&str]) {
        let mut all = vec!["-n", self.name.as_str()];
        all.extend_from_slice(args);
        run("ip", &all);
    }

    /// `ip netns exec NAME prog args`.
    pub fn exec(&self, prog: &str, args: &[&str]) {
        let mut all = vec!["netns", "exec", self.name.as_str(), prog];
        all.extend_from_slice(args);
        run("ip", &all);
    }

    pub fn path(&self) -> String {
        format!("/var/run/netns/{}", self.name)
    }

    /// Runs `f` on a new thread that has entered the namespace.
    pub fn run_in<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        let path = self.path();
        std::thread::scope(|s| {
            s.spawn(|| {
                enter(&path);
                f()
            })
            .join()
            .expect("namespace thread panicked")
        })
    }
}

impl Drop for Ns {
    fn drop(&mut self) {
        match Command::new("ip")
            .args(["netns", "del", &self.name])
            .output()
        {
            Ok(o) if o.status.success() => {}
            Ok(o) => eprintln!(
                "warning: ip netns del {}: {}",
                self.name,
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(e) => eprintln!("warning: ip netns del {}: {e}", self.name),
        }
    }
}

/// Moves the calling thread into the network namespace at `path`.
pub fn enter(path: &str) {
    let file = File::open(path).unwrap_or_else(|e| panic!("open {path}: {e}"));
    // SAFETY: setns on a namespace file descriptor we own; it changes
    // only this thread's network namespace.
    let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(rc, 0, "setns {path}: {}", std::io::Error::last_os_error());
}

/// `CAP_NET_ADMIN` and `CAP_NET_RAW` (linux/capability.h).
pub const CAP_NET_ADMIN: u32 = 12;
pub const CAP_NET_RAW: u32 = 13;

/// Drops capability `cap` from the calling thread's effective set
/// (capabilities are per thread on Linux: the rest of the process keeps
/// it).
pub fn drop_capability_in_this_thread(cap: u32) {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: i32,
    }
    #[repr(C)]
    #[derive(Clone, Copy, Default)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    let mut hdr = Header {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let mut data = [Data::default(); 2];
    // SAFETY: capget writes two Data structs for version 3.
    let rc = unsafe { libc::syscall(libc::SYS_capget, &mut hdr, data.as_mut_ptr()) };
    assert_eq!(rc, 0, "capget: {}", std::io::Error::last_os_error());
    data[(cap / 32) as usize].effective &= !(1 << (cap % 32));
    // SAFETY: capset reads the header and two Data structs; pid 0 = this
    // thread.
    let rc = unsafe { libc::syscall(libc::SYS_capset, &mut hdr, data.as_ptr()) };
    assert_eq!(rc, 0, "capset: {}", std::io::Error::last_os_error());
}
