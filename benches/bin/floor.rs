//! The floor of an unchanged refresh cycle (issue 35): a bare conditional-GET client built
//! from the project's crates (tokio, reqwest with the project's features, rusqlite bundled),
//! doing what a 304 cycle must do and nothing else. `scripts/scale` runs it against the same
//! loopback 304 server as the daemon, in the same run, and prints the daemon's CPU per 304 as
//! a ratio to each variant.
//!
//! Variants:
//! - `--tick-ms 0`: one wake-up per request (a timer per due time, a task per request);
//! - `--tick-ms 100`: requests due within a tick are started together on the tick;
//! - `--sqlite`: each request also does one cached-statement SQLite point read of its watch,
//!   and `last_checked_at` is written for every refreshed watch once a second, in one
//!   transaction (the daemon's group commit).
//!
//! It prints one JSON line: the variant, the 304s in the window, the process's CPU seconds in
//! it and the microseconds of CPU per 304.
//!
//!     cargo build --release -p schemawatch-benches --bin floor
//!     target/release/floor --port 8080 --watches 10000 --interval 60 --concurrency 16 \
//!         --warmup 60 --window 60 --tick-ms 100 --sqlite

use rusqlite::{params, Connection, OptionalExtension};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Semaphore;
use tokio::time::Instant;

struct Args {
    port: u16,
    watches: usize,
    interval: Duration,
    concurrency: usize,
    warmup: Duration,
    window: Duration,
    tick: Duration,
    sqlite: bool,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        port: 0,
        watches: 10_000,
        interval: Duration::from_secs(60),
        concurrency: 16,
        warmup: Duration::from_secs(60),
        window: Duration::from_secs(60),
        tick: Duration::ZERO,
        sqlite: false,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        if flag == "--sqlite" {
            args.sqlite = true;
            continue;
        }
        let value = it.next().ok_or_else(|| format!("{flag} needs a value"))?;
        let number = |v: &str| {
            v.parse::<u64>()
                .map_err(|_| format!("{flag}: {v:?} is not a number"))
        };
        match flag.as_str() {
            "--port" => args.port = number(&value)? as u16,
            "--watches" => args.watches = number(&value)? as usize,
            "--interval" => args.interval = Duration::from_secs(number(&value)?),
            "--concurrency" => args.concurrency = number(&value)? as usize,
            "--warmup" => args.warmup = Duration::from_secs(number(&value)?),
            "--window" => args.window = Duration::from_secs(number(&value)?),
            "--tick-ms" => args.tick = Duration::from_millis(number(&value)?),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    if args.port == 0 || args.watches == 0 || args.concurrency == 0 {
        return Err("--port, and non-zero --watches and --concurrency, are required".into());
    }
    Ok(args)
}

/// CPU seconds (user + system) of this process so far.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    (ticks(11) + ticks(12)) / rustix::param::clock_ticks_per_second() as f64
}

/// The SQLite side of floor C: a point read per request, bookkeeping batched once a second.
struct Store {
    conn: Mutex<Connection>,
    checked: Mutex<Vec<(usize, u64)>>,
}

impl Store {
    fn create(dir: &std::path::Path, watches: usize) -> rusqlite::Result<Store> {
        let conn = Connection::open(dir.join("floor.sqlite3"))?;
        conn.pragma_update(None, "journal_mode", "WAL")?;
        conn.pragma_update(None, "synchronous", "FULL")?;
        conn.set_db_config(
            rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
            true,
        )?;
        conn.execute_batch(
            "CREATE TABLE watch_state (watch TEXT PRIMARY KEY, fingerprint TEXT, etag TEXT,
                                       last_checked_at INTEGER) WITHOUT ROWID;",
        )?;
        let tx = conn.unchecked_transaction()?;
        {
            let mut insert = tx.prepare("INSERT INTO watch_state VALUES (?1, ?2, '\"v1\"', 0)")?;
            for i in 0..watches {
                insert.execute(params![name(i), format!("{i:064x}")])?;
            }
        }
        tx.commit()?;
        Ok(Store {
            conn: Mutex::new(conn),
            checked: Mutex::new(Vec::new()),
        })
    }

    fn read(&self, i: usize) -> Option<String> {
        let conn = self.conn.lock().ok()?;
        let mut stmt = conn
            .prepare_cached("SELECT etag FROM watch_state WHERE watch = ?1")
            .ok()?;
        stmt.query_row(params![name(i)], |r| r.get(0))
            .optional()
            .ok()
            .flatten()
    }

    fn checked(&self, i: usize, at: u64) {
        if let Ok(mut c) = self.checked.lock() {
            c.push((i, at));
        }
    }

    fn flush(&self) {
        let batch = match self.checked.lock() {
            Ok(mut c) => std::mem::take(&mut *c),
            Err(_) => return,
        };
        let Ok(conn) = self.conn.lock() else { return };
        let Ok(tx) = conn.unchecked_transaction() else {
            return;
        };
        if let Ok(mut stmt) =
            tx.prepare_cached("UPDATE watch_state SET last_checked_at = ?2 WHERE watch = ?1")
        {
            for (i, at) in batch {
                let _ = stmt.execute(params![name(i), at as i64]);
            }
        }
        let _ = tx.commit();
    }
}

fn name(i: usize) -> String {
    format!("scale.w{i:06}")
}

/// One conditional GET of watch `i` (and the SQLite read and bookkeeping with `store`).
async fn refresh(
    client: reqwest::Client,
    port: u16,
    i: usize,
    store: Option<Arc<Store>>,
    not_modified: Arc<AtomicU64>,
) {
    let etag = match &store {
        Some(s) => s.read(i).unwrap_or_default(),
        None => "\"v1\"".to_owned(),
    };
    let url = format!("http://127.0.0.1:{port}/w{i}.json");
    let Ok(response) = client
        .get(url)
        .header(reqwest::header::IF_NONE_MATCH, etag)
        .send()
        .await
    else {
        return;
    };
    let status = response.status();
    let _ = response.bytes().await;
    if status == reqwest::StatusCode::NOT_MODIFIED {
        not_modified.fetch_add(1, Ordering::Relaxed);
        if let Some(s) = &store {
            let at = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs());
            s.checked(i, at);
        }
    }
}

fn main() {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("floor: {e}");
            std::process::exit(2);
        }
    };
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("floor: {e}");
            std::process::exit(1);
        }
    };
    match runtime.block_on(run(args)) {
        Ok(line) => println!("{line}"),
        Err(e) => {
            eprintln!("floor: {e}");
            std::process::exit(1);
        }
    }
}

async fn run(args: Args) -> Result<String, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| e.to_string())?;
    let dir = std::env::temp_dir().join(format!("floor-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let store = if args.sqlite {
        Some(Arc::new(
            Store::create(&dir, args.watches).map_err(|e| e.to_string())?,
        ))
    } else {
        None
    };
    if let Some(s) = store.clone() {
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_secs(1));
            loop {
                every.tick().await;
                let s = s.clone();
                let _ = tokio::task::spawn_blocking(move || s.flush()).await;
            }
        });
    }
    let not_modified = Arc::new(AtomicU64::new(0));
    let slots = Arc::new(Semaphore::new(args.concurrency));
    let start = Instant::now();
    let step = args.interval.div_f64(args.watches as f64);
    let mut heap: BinaryHeap<Reverse<(Instant, usize)>> = (0..args.watches)
        .map(|i| Reverse((start + step.mul_f64(i as f64), i)))
        .collect();
    let window_start = start + args.warmup;
    let window_end = window_start + args.window;
    let mut measured: Option<(f64, u64)> = None;
    loop {
        let now = Instant::now();
        if measured.is_none() && now >= window_start {
            measured = Some((cpu_seconds(), not_modified.load(Ordering::Relaxed)));
        }
        if now >= window_end {
            break;
        }
        let Some(Reverse((due, _))) = heap.peek().copied() else {
            break;
        };
        if due > now {
            let wake = if args.tick.is_zero() {
                due
            } else {
                // The next tick boundary at or after `due`.
                let ticks =
                    due.saturating_duration_since(start).as_nanos() / args.tick.as_nanos().max(1);
                start + args.tick * (ticks as u32 + 1)
            };
            tokio::time::sleep_until(wake.min(window_end).max(now)).await;
            continue;
        }
        // Start everything due now (one per wake-up without a tick: due times are distinct).
        while let Some(Reverse((due, i))) = heap.peek().copied() {
            if due > Instant::now() {
                break;
            }
            heap.pop();
            let permit = slots
                .clone()
                .acquire_owned()
                .await
                .map_err(|e| e.to_string())?;
            let (client, store, nm) = (client.clone(), store.clone(), not_modified.clone());
            tokio::spawn(async move {
                refresh(client, args.port, i, store, nm).await;
                drop(permit);
            });
            heap.push(Reverse((due + args.interval, i)));
            if args.tick.is_zero() {
                break;
            }
        }
    }
    let (cpu0, nm0) = measured.ok_or("the window never started")?;
    let cpu = cpu_seconds() - cpu0;
    let n = not_modified.load(Ordering::Relaxed) - nm0;
    let _ = std::fs::remove_dir_all(&dir);
    let variant = format!(
        "{}{}",
        if args.tick.is_zero() {
            "per-request".to_owned()
        } else {
            format!("tick-{}ms", args.tick.as_millis())
        },
        if args.sqlite { "+sqlite" } else { "" }
    );
    let per = if n == 0 {
        f64::INFINITY
    } else {
        cpu * 1e6 / n as f64
    };
    Ok(format!(
        "{{\"variant\":\"{variant}\",\"not_modified\":{n},\"cpu_seconds\":{cpu:.3},\"us_per_304\":{per:.1}}}"
    ))
}
