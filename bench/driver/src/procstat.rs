//! What the kernel knows about a process: CPU time, peak RSS; and CPU pinning.
//!
//! The only module of the bench allowed `unsafe`: plain libc calls (`sysconf`,
//! `getrusage`, `sched_setaffinity`) with no safe std equivalent. presa itself forbids it.
#![allow(unsafe_code)]

use std::fs;
use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// CPU time of every live thread of `pid`, in nanoseconds (the sum of
/// `/proc/PID/task/*/schedstat`), falling back to `utime + stime` of `/proc/PID/stat`.
pub fn cpu_ns(pid: u32) -> u64 {
    let mut total = 0u64;
    let mut found = false;
    if let Ok(tasks) = fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            if let Ok(s) = fs::read_to_string(t.path().join("schedstat"))
                && let Some(ns) = s
                    .split_whitespace()
                    .next()
                    .and_then(|v| v.parse::<u64>().ok())
            {
                total += ns;
                found = true;
            }
        }
    }
    if found { total } else { stat_cpu_ns(pid) }
}

/// `utime + stime` of `/proc/PID/stat` (every thread, dead ones included), in ns.
pub fn stat_cpu_ns(pid: u32) -> u64 {
    let Ok(s) = fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    let Some(rest) = s.rsplit_once(')').map(|(_, r)| r) else {
        return 0;
    };
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f.get(11).and_then(|v| v.parse().ok()).unwrap_or(0)
        + f.get(12).and_then(|v| v.parse().ok()).unwrap_or(0);
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    ticks * 1_000_000_000 / hz
}

/// Peak resident set size of `pid` (`VmHWM`), in KiB.
pub fn peak_rss_kib(pid: u32) -> u64 {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// CPU time this process has used so far (user + system), in ns.
pub fn self_cpu_ns() -> u64 {
    // SAFETY: getrusage writes into the struct we own.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1000;
    tv(u.ru_utime) + tv(u.ru_stime)
}

/// Pins the process that `command` starts to `cpu` (what `taskset -c CPU` does, without
/// an extra exec that cold start would count).
pub fn pin_command(command: &mut Command, cpu: Option<usize>) {
    if let Some(cpu) = cpu {
        // SAFETY: sched_setaffinity is async-signal-safe; the set lives on this stack.
        unsafe {
            command.pre_exec(move || {
                let mut set: libc::cpu_set_t = std::mem::zeroed();
                libc::CPU_SET(cpu, &mut set);
                if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
}
