//! systemd notifications (`Type=notify`): READY=1, STATUS=, WATCHDOG=1, RELOADING=1,
//! STOPPING=1. Every call is a no-op when `NOTIFY_SOCKET` is unset (containers, a shell).
//! A failed notification is logged at debug level and never stops the daemon.

use sd_notify::NotifyState;
use std::time::Duration;

fn send(states: &[NotifyState]) {
    if std::env::var_os("NOTIFY_SOCKET").is_none() {
        return;
    }
    if let Err(e) = sd_notify::notify(states) {
        tracing::debug!(event = "sd_notify_failed", error = %e);
    }
}

/// READY=1 with a STATUS= line (also ends a reload).
pub fn ready(status: &str) {
    send(&[NotifyState::Ready, NotifyState::Status(status)]);
}

pub fn status(status: &str) {
    send(&[NotifyState::Status(status)]);
}

/// RELOADING=1 with MONOTONIC_USEC= (as systemd wants for reloads).
pub fn reloading() {
    match NotifyState::monotonic_usec_now() {
        Ok(now) => send(&[
            NotifyState::Reloading,
            now,
            NotifyState::Status("reloading config"),
        ]),
        Err(_) => send(&[
            NotifyState::Reloading,
            NotifyState::Status("reloading config"),
        ]),
    }
}

pub fn stopping() {
    send(&[NotifyState::Stopping, NotifyState::Status("draining")]);
}

pub fn watchdog() {
    send(&[NotifyState::Watchdog]);
}

/// How often to send WATCHDOG=1: half of `WATCHDOG_USEC` when the watchdog is enabled for
/// this process, else `None`.
pub fn watchdog_interval() -> Option<Duration> {
    sd_notify::watchdog_enabled().map(|d| (d / 2).max(Duration::from_millis(100)))
}
