//! The daemon's one scheduler: a timer heap keyed by each watch's next due time. A refresh is
//! spawned only when its watch is due and a refresh slot is free, so an idle watch costs a
//! few dozen bytes of plain data (no task, no future), and configs are shared through the
//! daemon's `Arc<Config>` (a watch is its index there), never copied per watch.
//!
//! Timing policy (docs/reliability.md P19 and §3) is in pure functions ([`first_delay`],
//! [`next_interval`], [`backoff`]); [`Scheduler`] is plain data over them, and [`drive`] is
//! the only part that awaits: it is tested with paused tokio time.

use crate::config::Config;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, watch, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Instant;

pub use crate::fetch::later;

/// Longest wait between retries of a failing watch (the backoff may exceed its interval).
pub const MAX_BACKOFF: Duration = Duration::from_secs(600);
/// The first retry after an error comes after about this long (jittered down to half).
pub const FIRST_BACKOFF: Duration = Duration::from_secs(5);
/// The first refresh of a watch comes within `min(interval, first_spread(watches))`: at least
/// this long...
pub const FIRST_SPREAD: Duration = Duration::from_secs(30);
/// ...and this long per watch of the config, so a start asks for at most 500 first refreshes
/// a second on average (100,000 watches spread over 200 s, not a 30 s burst whose backlog
/// makes every watch late).
pub const FIRST_SPREAD_PER_WATCH: Duration = Duration::from_millis(2);

/// The window a start spreads first refreshes over, for a config of `watches` watches.
pub fn first_spread(watches: usize) -> Duration {
    let per_watch =
        FIRST_SPREAD_PER_WATCH.saturating_mul(u32::try_from(watches).unwrap_or(u32::MAX));
    FIRST_SPREAD.max(per_watch)
}

/// A small PRNG for jitter (xorshift64*).
#[derive(Debug, Clone, Copy)]
pub struct Jitter(u64);

impl Jitter {
    pub fn seeded(seed: u64) -> Jitter {
        let clock = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x9E37_79B9_7F4A_7C15);
        Jitter((seed ^ clock) | 1)
    }

    /// A fraction in [0, 1).
    pub fn fraction(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// FNV-1a of a watch name: a deterministic per-watch offset (stable across restarts).
/// FNV-1a alone leaves similar names (`ns.w1`, `ns.w2`) close in the high bits, so the
/// result goes through the splitmix64 finalizer.
pub(crate) fn name_hash(name: &str) -> u64 {
    let h = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    let z = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Delay before a watch's first refresh: a fixed fraction (from its name) of
/// `min(interval, first_spread(watches))`, `watches` being the size of its config.
pub fn first_delay(watch: &crate::config::WatchConfig, watches: usize) -> Duration {
    let fraction = (name_hash(&watch.name) >> 11) as f64 / (1u64 << 53) as f64;
    watch.interval.min(first_spread(watches)).mul_f64(fraction)
}

/// Wait after a failed refresh: `min(interval, FIRST_BACKOFF) * 2^(failures-1)`, capped by
/// `MAX_BACKOFF` (not by the interval: a 1 s watch of a failing server backs off to minutes),
/// times a jitter factor in [0.5, 1).
pub fn backoff(failures: i64, interval: Duration, jitter: f64) -> Duration {
    let exponent = (failures.max(1) - 1).min(16) as u32;
    FIRST_BACKOFF
        .min(interval)
        .saturating_mul(1u32 << exponent)
        .min(MAX_BACKOFF)
        .mul_f64(0.5 + jitter.clamp(0.0, 1.0) / 2.0)
}

/// Wait after a successful refresh: the interval ± 10% (saturating: never a panic).
pub fn next_interval(interval: Duration, jitter: f64) -> Duration {
    Duration::try_from_secs_f64(interval.as_secs_f64() * (0.9 + jitter.clamp(0.0, 1.0) / 5.0))
        .unwrap_or(Duration::MAX)
}

/// What the scheduler keeps per watch: plain data, parallel to `Config::watches`.
#[derive(Debug, Clone, Copy)]
struct Slot {
    due: Instant,
    jitter: Jitter,
    /// Tells a refresh of this slot from one of a watch removed and re-added meanwhile.
    generation: u32,
    running: bool,
    /// Refresh again as soon as the running refresh ends (asked on demand while it ran).
    again: bool,
}

/// How a reload changed the schedule.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reloaded {
    pub added: usize,
    pub removed: usize,
    pub changed: usize,
    pub unchanged: usize,
}

/// A refresh the scheduler started: the watch's index in [`Scheduler::config`] and the time
/// it was due.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Started {
    pub index: usize,
    pub generation: u32,
    pub due: Instant,
}

/// The timer heap over the configured watches.
pub struct Scheduler {
    config: Arc<Config>,
    slots: Vec<Slot>,
    /// (due, index, generation); an entry whose slot moved on is skipped when it surfaces.
    heap: BinaryHeap<Reverse<(Instant, u32, u32)>>,
    next_generation: u32,
}

impl Scheduler {
    /// Every watch of `config` scheduled for its first refresh (`first_delay` from `now`).
    pub fn new(config: Arc<Config>, now: Instant) -> Scheduler {
        let mut s = Scheduler {
            config: config.clone(),
            slots: Vec::with_capacity(config.watches.len()),
            heap: BinaryHeap::with_capacity(config.watches.len()),
            next_generation: 0,
        };
        for w in &config.watches {
            let slot = s.fresh_slot(later(now, first_delay(w, config.watches.len())), &w.name);
            s.slots.push(slot);
        }
        s.rebuild_heap();
        s
    }

    fn fresh_slot(&mut self, due: Instant, name: &str) -> Slot {
        self.next_generation = self.next_generation.wrapping_add(1);
        Slot {
            due,
            jitter: Jitter::seeded(name_hash(name)),
            generation: self.next_generation,
            running: false,
            again: false,
        }
    }

    fn rebuild_heap(&mut self) {
        self.heap = self
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.running)
            .map(|(i, s)| Reverse((s.due, i as u32, s.generation)))
            .collect();
    }

    /// The config the indices refer to.
    pub fn config(&self) -> &Arc<Config> {
        &self.config
    }

    /// When the earliest waiting watch is due (`None`: every watch is running, or none).
    pub fn next_due(&mut self) -> Option<Instant> {
        while let Some(Reverse((due, index, generation))) = self.heap.peek().copied() {
            match self.slots.get(index as usize) {
                Some(s) if s.generation == generation && !s.running && s.due == due => {
                    return Some(due)
                }
                _ => {
                    self.heap.pop();
                }
            }
        }
        None
    }

    /// The earliest watch due at `now`, marked running; `None` when none is due.
    pub fn pop_due(&mut self, now: Instant) -> Option<Started> {
        let due = self.next_due()?;
        if due > now {
            return None;
        }
        let Reverse((due, index, generation)) = self.heap.pop()?;
        let slot = self.slots.get_mut(index as usize)?;
        slot.running = true;
        Some(Started {
            index: index as usize,
            generation,
            due,
        })
    }

    /// A refresh started by [`Scheduler::pop_due`] ended at `now` (`ok`: not an error;
    /// `failures`: the watch's errors in a row, for the backoff). Answers the watch's name and
    /// its next due time, or `None` when the watch left the config meanwhile.
    pub fn finished(
        &mut self,
        name: &str,
        generation: u32,
        ok: bool,
        failures: i64,
        now: Instant,
    ) -> Option<Instant> {
        let index = self.index_of(name)?;
        let interval = self.config.watches.get(index)?.interval;
        let slot = self.slots.get_mut(index)?;
        if slot.generation != generation || !slot.running {
            return None;
        }
        let wait = if slot.again {
            Duration::ZERO
        } else if ok {
            next_interval(interval, slot.jitter.fraction())
        } else {
            backoff(failures, interval, slot.jitter.fraction())
        };
        slot.again = false;
        slot.running = false;
        slot.due = later(now, wait);
        let due = slot.due;
        self.heap
            .push(Reverse((due, index as u32, slot.generation)));
        Some(due)
    }

    fn index_of(&self, name: &str) -> Option<usize> {
        self.config
            .watch_index(name)
            .filter(|i| *i < self.slots.len())
    }

    /// Switches to `new`: unchanged watches keep their schedule (running ones stay running),
    /// a changed one keeps it unless its interval shrank (then it is due within the new
    /// interval), new ones get their first-refresh delay, removed ones are dropped.
    pub fn reload(&mut self, new: Arc<Config>, now: Instant) -> Reloaded {
        let mut r = Reloaded::default();
        let watches = new.watches.len();
        let mut slots = Vec::with_capacity(watches);
        for w in &new.watches {
            let old = self
                .index_of(&w.name)
                .and_then(|i| Some((self.config.watches.get(i)?, *self.slots.get(i)?)));
            let slot = match old {
                Some((before, slot)) if before == w => {
                    r.unchanged += 1;
                    slot
                }
                Some((before, mut slot)) => {
                    r.changed += 1;
                    if w.interval < before.interval {
                        let sooner = later(now, next_interval(w.interval, slot.jitter.fraction()));
                        slot.due = slot.due.min(sooner);
                    }
                    slot
                }
                None => {
                    r.added += 1;
                    self.fresh_slot(later(now, first_delay(w, watches)), &w.name)
                }
            };
            slots.push(slot);
        }
        r.removed = self.config.watches.len() + r.added - new.watches.len();
        self.slots = slots;
        self.config = new;
        self.rebuild_heap();
        r
    }

    /// An on-demand refresh of `name`: due now, or right after the one running now. Asking
    /// again while one is queued changes nothing; the refresh after it is scheduled from its
    /// end, as always (no burst).
    pub fn refresh_now(&mut self, name: &str, now: Instant) -> crate::state::OnDemand {
        let Some(index) = self.index_of(name) else {
            return crate::state::OnDemand::Unknown;
        };
        let Some(slot) = self.slots.get_mut(index) else {
            return crate::state::OnDemand::Unknown;
        };
        if slot.running {
            slot.again = true;
        } else if slot.due > now {
            slot.due = now;
            self.heap
                .push(Reverse((now, index as u32, slot.generation)));
        }
        crate::state::OnDemand::Queued
    }

    /// The due time of the watch at `index` (for the overdue gauge).
    pub fn due(&self, index: usize) -> Option<Instant> {
        self.slots.get(index).map(|s| s.due)
    }
}

/// What the scheduler tells the rest of the daemon (the overdue gauge, the lag histogram).
pub trait Observer: Send + Sync {
    /// The next refresh of `name` is due at `due`.
    fn scheduled(&self, _name: &str, _due: Instant) {}
    /// A refresh of `name`, due at `due`, starts now.
    fn starting(&self, _name: &str, _due: Instant) {}
}

/// One refresh: `(config, index, permit)` to (ok, consecutive failures).
pub type Refresher = Arc<
    dyn Fn(
            Arc<Config>,
            usize,
            OwnedSemaphorePermit,
        ) -> Pin<Box<dyn Future<Output = (bool, i64)> + Send>>
        + Send
        + Sync,
>;

/// Messages to a running [`drive`].
pub enum Control {
    Reload(Arc<Config>, oneshot::Sender<Reloaded>),
    /// `POST /v1/watches/{name}/refresh`.
    RefreshNow(crate::state::RefreshRequest),
}

/// Refreshes still in flight when [`drive`] stopped, and the watch of each (by task id).
pub struct InFlight {
    pub tasks: JoinSet<(bool, i64)>,
    pub watches: HashMap<tokio::task::Id, String>,
}

/// The daemon's start tick: refreshes due within one tick start together at its end, so
/// one wake-up starts many of them (at 10,000 watches a minute, ~17 a tick) instead of one
/// wake-up each. No refresh starts more than a tick after its due time.
pub const START_TICK: Duration = Duration::from_millis(100);

/// The first boundary of the grid `origin + k * tick` at or after `due` (`due` itself when
/// `tick` is zero).
pub fn on_tick(due: Instant, origin: Instant, tick: Duration) -> Instant {
    let tick_ns = tick.as_nanos();
    if tick_ns == 0 {
        return due;
    }
    let since = due.saturating_duration_since(origin).as_nanos();
    let boundary = since.div_ceil(tick_ns).saturating_mul(tick_ns);
    let offset = Duration::from_nanos(u64::try_from(boundary).unwrap_or(u64::MAX));
    later(origin, offset).max(due)
}

/// Runs the schedule until `stop` turns true: waits for the earliest due time (rounded up to
/// the next `tick` boundary), then for a refresh slot, then spawns each refresh due by then.
/// Answers the refreshes still in flight (the caller drains them within its deadline).
pub async fn drive(
    mut scheduler: Scheduler,
    semaphore: Arc<Semaphore>,
    refresher: Refresher,
    observer: Arc<dyn Observer>,
    mut control: mpsc::Receiver<Control>,
    mut stop: watch::Receiver<bool>,
    tick: Duration,
) -> InFlight {
    let origin = Instant::now();
    let mut running: JoinSet<(bool, i64)> = JoinSet::new();
    let mut names: HashMap<tokio::task::Id, (String, u32)> = HashMap::new();
    for (i, w) in scheduler.config().watches.iter().enumerate() {
        if let Some(due) = scheduler.due(i) {
            observer.scheduled(&w.name, due);
        }
    }
    loop {
        let next = scheduler.next_due();
        // Due once its tick has come: a wake-up between ticks (a refresh ending) starts nothing
        // early, so the starts stay grouped.
        let due_now = next.is_some_and(|d| on_tick(d, origin, tick) <= Instant::now());
        tokio::select! {
            biased;
            _ = stop.wait_for(|s| *s) => break,
            message = control.recv() => match message {
                Some(Control::Reload(config, reply)) => {
                    let r = scheduler.reload(config, Instant::now());
                    for (i, w) in scheduler.config().watches.iter().enumerate() {
                        if let Some(due) = scheduler.due(i) {
                            observer.scheduled(&w.name, due);
                        }
                    }
                    let _ = reply.send(r);
                }
                Some(Control::RefreshNow(request)) => {
                    let answer = scheduler.refresh_now(&request.watch, Instant::now());
                    if let Some(due) = scheduler.config().watch_index(&request.watch).and_then(|i| scheduler.due(i)) {
                        observer.scheduled(&request.watch, due);
                    }
                    let _ = request.reply.send(answer);
                }
                None => break,
            },
            Some(joined) = running.join_next_with_id(), if !running.is_empty() => {
                let (id, ok, failures) = match joined {
                    Ok((id, (ok, failures))) => (id, ok, failures),
                    // A refresh that panicked counts as a failure.
                    Err(e) => (e.id(), false, 1),
                };
                if let Some((name, generation)) = names.remove(&id) {
                    if let Some(due) = scheduler.finished(&name, generation, ok, failures, Instant::now()) {
                        observer.scheduled(&name, due);
                    }
                }
            }
            permit = semaphore.clone().acquire_owned(), if due_now => {
                let Ok(permit) = permit else { break };
                if let Some(started) = scheduler.pop_due(Instant::now()) {
                    let config = scheduler.config().clone();
                    let name = config.watches.get(started.index).map(|w| w.name.clone()).unwrap_or_default();
                    observer.starting(&name, started.due);
                    let handle = running.spawn((refresher)(config, started.index, permit));
                    names.insert(handle.id(), (name, started.generation));
                }
            }
            _ = tokio::time::sleep_until(on_tick(next.unwrap_or_else(Instant::now), origin, tick)), if next.is_some() && !due_now => {}
        }
    }
    InFlight {
        tasks: running,
        watches: names
            .into_iter()
            .map(|(id, (name, _))| (id, name))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn an_on_demand_refresh_is_due_now_once_and_the_next_counts_from_its_end() {
        let start = Instant::now();
        let mut s = Scheduler::new(config(1, "1h"), start);
        let now = start;
        for _ in 0..3 {
            assert_eq!(s.refresh_now("ns.w0", now), crate::state::OnDemand::Queued);
        }
        assert_eq!(
            s.refresh_now("ns.nope", now),
            crate::state::OnDemand::Unknown
        );
        let started = s.pop_due(now).expect("due now");
        // Three asks, one refresh.
        assert!(s.pop_due(now).is_none());
        // Asked again while it runs: due right after it ends, then back to the interval.
        assert_eq!(s.refresh_now("ns.w0", now), crate::state::OnDemand::Queued);
        let end = now + Duration::from_secs(2);
        let due = s
            .finished("ns.w0", started.generation, true, 0, end)
            .unwrap();
        assert_eq!(due, end);
        let again = s.pop_due(end).unwrap();
        let later_end = end + Duration::from_secs(1);
        let next = s
            .finished("ns.w0", again.generation, true, 0, later_end)
            .unwrap();
        assert!(
            next >= later_end + Duration::from_secs(54 * 60),
            "{:?}",
            next - later_end
        );
    }

    fn config(n: usize, interval: &str) -> Arc<Config> {
        Arc::new(
            Config::parse(
                std::path::Path::new("/tmp/x.toml"),
                &(0..n)
                    .map(|i| format!("[[watch]]\nname = \"ns.w{i}\"\nkind = \"openapi\"\npath = \"x.json\"\ninterval = \"{interval}\"\n"))
                    .collect::<String>(),
            )
            .unwrap(),
        )
    }

    struct Quiet;
    impl Observer for Quiet {}

    type Log = Arc<Mutex<Vec<(String, Instant)>>>;

    /// A refresher that records (watch, start) and answers `ok` after `takes`; `in_flight`
    /// tracks how many run at once (the most seen in `.1`).
    /// When `name`'s refreshes started, in order.
    fn starts_of(log: &[(String, Instant)], name: &str) -> Vec<Instant> {
        log.iter()
            .filter(|(n, _)| n == name)
            .map(|(_, t)| *t)
            .collect()
    }

    fn recorder(
        log: Log,
        ok: bool,
        takes: Duration,
        in_flight: Arc<Mutex<(usize, usize)>>,
    ) -> Refresher {
        let failures = Arc::new(Mutex::new(0i64));
        Arc::new(move |config: Arc<Config>, index, permit| {
            let (log, in_flight, failures) = (log.clone(), in_flight.clone(), failures.clone());
            Box::pin(async move {
                let name = config.watches[index].name.clone();
                log.lock().unwrap().push((name, Instant::now()));
                {
                    let mut f = in_flight.lock().unwrap();
                    f.0 += 1;
                    f.1 = f.1.max(f.0);
                }
                tokio::time::sleep(takes).await;
                in_flight.lock().unwrap().0 -= 1;
                drop(permit);
                let mut f = failures.lock().unwrap();
                *f = if ok { 0 } else { *f + 1 };
                (ok, *f)
            })
        })
    }

    async fn run_for(
        config: Arc<Config>,
        slots: usize,
        refresher: Refresher,
        total: Duration,
    ) -> usize {
        run_ticked(config, slots, refresher, total, Duration::ZERO).await
    }

    async fn run_ticked(
        config: Arc<Config>,
        slots: usize,
        refresher: Refresher,
        total: Duration,
        tick: Duration,
    ) -> usize {
        let (stop_tx, stop_rx) = watch::channel(false);
        let (_control_tx, control_rx) = mpsc::channel(1);
        let scheduler = Scheduler::new(config, Instant::now());
        let task = tokio::spawn(drive(
            scheduler,
            Arc::new(Semaphore::new(slots)),
            refresher,
            Arc::new(Quiet),
            control_rx,
            stop_rx,
            tick,
        ));
        tokio::time::sleep(total).await;
        stop_tx.send(true).unwrap();
        let mut rest = task.await.unwrap();
        let left = rest.tasks.len();
        assert_eq!(rest.watches.len(), left);
        while rest.tasks.join_next().await.is_some() {}
        left
    }

    #[tokio::test(start_paused = true)]
    async fn each_watch_is_refreshed_once_per_interval_within_the_jitter() {
        let log: Log = Arc::default();
        let start = Instant::now();
        let refresher = recorder(log.clone(), true, Duration::from_millis(50), Arc::default());
        run_for(config(20, "10s"), 4, refresher, Duration::from_secs(105)).await;
        let log = log.lock().unwrap();
        for i in 0..20 {
            let name = format!("ns.w{i}");
            let times = starts_of(&log, &name);
            // First within min(interval, 30 s), then every 9..11 s after the previous one ended.
            assert!(times[0] - start < Duration::from_secs(10), "{name}");
            assert!((9..=11).contains(&times.len()), "{name}: {}", times.len());
            for pair in times.windows(2) {
                let gap = pair[1] - pair[0];
                assert!(
                    gap >= Duration::from_secs(9) && gap <= Duration::from_millis(11_100),
                    "{name}: {gap:?}"
                );
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn refreshes_start_together_on_the_tick_and_never_a_tick_late() {
        let log: Log = Arc::default();
        let start = Instant::now();
        let refresher = recorder(log.clone(), true, Duration::from_millis(5), Arc::default());
        run_ticked(
            config(200, "10s"),
            16,
            refresher,
            Duration::from_secs(35),
            START_TICK,
        )
        .await;
        let log = log.lock().unwrap();
        let mut starts: Vec<Instant> = log.iter().map(|(_, t)| *t).collect();
        // Every start is on the tick grid (no start between ticks)...
        for t in &starts {
            let since = (*t - start).as_nanos();
            assert_eq!(since % START_TICK.as_nanos(), 0, "{:?}", *t - start);
        }
        // ...so 200 watches a 10 s interval (~2 due per tick) share wake-ups.
        starts.dedup();
        assert!(
            starts.len() * 3 / 2 < log.len(),
            "{} of {}",
            starts.len(),
            log.len()
        );
        // Each watch's gaps stay within the interval's jitter plus at most one tick.
        for i in 0..200 {
            let name = format!("ns.w{i}");
            let times = starts_of(&log, &name);
            assert!(times.len() >= 3, "{name}: {}", times.len());
            for pair in times.windows(2) {
                let gap = pair[1] - pair[0];
                let most = Duration::from_secs(11) + Duration::from_millis(5) + START_TICK;
                assert!(
                    gap >= Duration::from_secs(9) && gap <= most,
                    "{name}: {gap:?}"
                );
            }
        }
    }

    #[test]
    fn on_tick_rounds_up_to_the_grid_by_less_than_a_tick() {
        let origin = Instant::now();
        let tick = Duration::from_millis(100);
        assert_eq!(on_tick(origin, origin, tick), origin);
        let due = origin + Duration::from_millis(1);
        assert_eq!(on_tick(due, origin, tick), origin + tick);
        let due = origin + Duration::from_millis(200);
        assert_eq!(on_tick(due, origin, tick), due);
        let due = origin + Duration::from_millis(250);
        assert_eq!(
            on_tick(due, origin, tick),
            origin + Duration::from_millis(300)
        );
        // A due time before the grid's origin (a backlog) starts at the origin, at once.
        let early = origin - Duration::from_millis(50);
        assert_eq!(on_tick(early, origin, tick), origin);
        assert_eq!(on_tick(due, origin, Duration::ZERO), due);
    }

    #[test]
    fn first_refreshes_spread_over_more_time_the_more_watches_there_are() {
        assert_eq!(first_spread(1), FIRST_SPREAD);
        assert_eq!(first_spread(10_000), FIRST_SPREAD);
        assert_eq!(first_spread(100_000), Duration::from_secs(200));
        assert_eq!(first_spread(usize::MAX), FIRST_SPREAD_PER_WATCH * u32::MAX);
        // Never beyond the interval: a 300 s watch of a 1,000,000-watch config starts within it.
        let config = config(1, "300s");
        let w = &config.watches[0];
        assert!(first_delay(w, 1_000_000) < Duration::from_secs(300));
        assert!(first_delay(w, 1) < FIRST_SPREAD);
    }

    #[tokio::test(start_paused = true)]
    async fn refreshes_in_flight_never_exceed_the_slots() {
        let log: Log = Arc::default();
        let in_flight: Arc<Mutex<(usize, usize)>> = Arc::default();
        let refresher = recorder(log.clone(), true, Duration::from_secs(2), in_flight.clone());
        let left = run_for(config(30, "1s"), 3, refresher, Duration::from_secs(60)).await;
        assert_eq!(in_flight.lock().unwrap().1, 3);
        assert!(left <= 3);
        // Slots, not timers, bound the rate: 3 slots of 2 s over 60 s.
        let n = log.lock().unwrap().len();
        assert!((85..=93).contains(&n), "{n}");
    }

    #[tokio::test(start_paused = true)]
    async fn a_failing_watch_backs_off_exponentially() {
        let log: Log = Arc::default();
        let refresher = recorder(log.clone(), false, Duration::ZERO, Arc::default());
        run_for(config(1, "1h"), 1, refresher, Duration::from_secs(1200)).await;
        let times: Vec<Instant> = log.lock().unwrap().iter().map(|(_, t)| *t).collect();
        let gaps: Vec<Duration> = times.windows(2).map(|p| p[1] - p[0]).collect();
        // 5 s × 2^k × [0.5, 1), capped at 600 s: the gaps grow, and stay under the cap.
        assert!(gaps.len() >= 5, "{gaps:?}");
        assert!(
            gaps[0] < FIRST_BACKOFF && gaps[0] >= FIRST_BACKOFF / 2,
            "{gaps:?}"
        );
        assert!(gaps[4] >= Duration::from_secs(40), "{gaps:?}");
        assert!(gaps.iter().all(|g| *g <= MAX_BACKOFF), "{gaps:?}");
    }

    #[tokio::test(start_paused = true)]
    async fn stop_starts_nothing_new() {
        let log: Log = Arc::default();
        let refresher = recorder(log.clone(), true, Duration::from_secs(30), Arc::default());
        let left = run_for(config(5, "1s"), 5, refresher, Duration::from_secs(2)).await;
        // The five started within their first second, each still running at the stop.
        assert_eq!(left, 5);
        assert_eq!(log.lock().unwrap().len(), 5);
    }

    #[test]
    fn reload_keeps_unchanged_schedules_and_pulls_in_a_shorter_interval() {
        let now = Instant::now();
        let mut s = Scheduler::new(config(3, "1h"), now);
        let due: Vec<Instant> = (0..3).map(|i| s.due(i).unwrap()).collect();
        let started = s.pop_due(now + Duration::from_secs(60)).unwrap();
        // ns.w0 unchanged, ns.w1 at 10 s, ns.w2 removed, ns.w3 added.
        let text = "[[watch]]\nname = \"ns.w0\"\nkind = \"openapi\"\npath = \"x.json\"\ninterval = \"1h\"\n\
                    [[watch]]\nname = \"ns.w1\"\nkind = \"openapi\"\npath = \"x.json\"\ninterval = \"10s\"\n\
                    [[watch]]\nname = \"ns.w3\"\nkind = \"openapi\"\npath = \"x.json\"\ninterval = \"1h\"\n";
        let new = Arc::new(Config::parse(std::path::Path::new("/tmp/x.toml"), text).unwrap());
        let later_now = now + Duration::from_secs(61);
        let r = s.reload(new, later_now);
        assert_eq!(
            r,
            Reloaded {
                added: 1,
                removed: 1,
                changed: 1,
                unchanged: 1
            }
        );
        assert_eq!(s.due(0), Some(due[0]));
        assert!(s.due(1).unwrap() <= later_now + Duration::from_secs(11));
        // A refresh started before the reload still ends on its watch (if it stayed).
        let name = format!("ns.w{}", started.index);
        let ended = s.finished(&name, started.generation, true, 0, later_now);
        assert_eq!(ended.is_some(), started.index != 2);
        // A stale completion (wrong generation) changes nothing.
        assert_eq!(s.finished("ns.w3", 0, true, 0, later_now), None);
    }

    #[test]
    fn pop_due_answers_in_due_order_and_only_when_due() {
        let now = Instant::now();
        let mut s = Scheduler::new(config(50, "10m"), now);
        let mut last = now;
        let mut n = 0;
        while let Some(started) = s.pop_due(now + FIRST_SPREAD) {
            assert!(started.due >= last);
            last = started.due;
            n += 1;
        }
        assert_eq!(n, 50);
        assert_eq!(s.next_due(), None, "every watch is running");
    }
}
