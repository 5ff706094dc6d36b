//! The cost of one unchanged refresh cycle (conditional GET answered 304, validators
//! recorded, no registry write) per watch, against a keep-alive HTTP server on 127.0.0.1, and
//! a scale pass: every watch of a registry of `SCHEMAWATCH_BENCH_WATCHES` (default 2000)
//! watches refreshed once, sequentially (what `schemawatch check` does).

use criterion::{criterion_group, criterion_main, Criterion};
use schemawatch::config::Config;
use schemawatch::refresh::{refresh, Action};
use schemawatch::registry::Registry;
use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

const DOC: &str = r#"{"openapi":"3.0.3","info":{"title":"bench","version":"1"},
"servers":[{"url":"https://bench.test/v1"}],
"paths":{"/items":{"get":{"operationId":"listItems","parameters":[{"name":"limit","in":"query","schema":{"type":"integer","maximum":100}}],
"responses":{"200":{"description":"ok","content":{"application/json":{"schema":{"type":"array","items":{"type":"object","properties":{"id":{"type":"integer"},"name":{"type":"string"}}}}}}}}}},
"/items/{id}":{"get":{"operationId":"getItem","parameters":[{"name":"id","in":"path","required":true,"schema":{"type":"string"}}],
"responses":{"200":{"description":"ok"}}}}}}"#;

fn serve(stream: TcpStream) {
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut out = stream;
    loop {
        let mut conditional = false;
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
            if line == "\r\n" {
                break;
            }
            if line
                .to_ascii_lowercase()
                .starts_with("if-none-match: \"v1\"")
            {
                conditional = true;
            }
        }
        let reply = if conditional {
            "HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nContent-Length: 0\r\n\r\n".to_string()
        } else {
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nETag: \"v1\"\r\nContent-Length: {}\r\n\r\n{DOC}",
                DOC.len()
            )
        };
        if out.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

fn server() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            std::thread::spawn(move || serve(s));
        }
    });
    addr
}

struct Setup {
    dir: PathBuf,
    config: Config,
    registry: Registry,
    rt: tokio::runtime::Runtime,
}

impl Drop for Setup {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn setup(addr: SocketAddr, watches: usize) -> Setup {
    let dir = std::env::temp_dir().join(format!(
        "schemawatch-bench-{}-{watches}",
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("mkdir");
    let mut text = String::from("[storage]\npath = \"registry.sqlite3\"\n");
    for i in 0..watches {
        text.push_str(&format!(
            "\n[[watch]]\nname = \"bench.w{i}\"\nkind = \"openapi\"\nurl = \"http://{addr}/doc/{i}\"\n"
        ));
    }
    let path = dir.join("schemawatch.toml");
    std::fs::write(&path, &text).expect("write config");
    let config = Config::load(&path).expect("config");
    let mut registry = Registry::open_at(&config.storage.location, true).expect("registry");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    for w in &config.watches {
        let o = rt.block_on(refresh(&mut registry, w, 100));
        assert_eq!(o.action, Action::Registered, "{:?}", o.error);
    }
    Setup {
        dir,
        config,
        registry,
        rt,
    }
}

fn unchanged_cycle(c: &mut Criterion) {
    let addr = server();
    let mut s = setup(addr, 16);
    let mut group = c.benchmark_group("refresh");
    group.sample_size(30);
    let mut i = 0usize;
    group.bench_function("unchanged (304) cycle per watch", |b| {
        b.iter(|| {
            let w = &s.config.watches[i % s.config.watches.len()];
            i += 1;
            let o = s.rt.block_on(refresh(&mut s.registry, w, 100));
            assert_eq!(o.action, Action::Unchanged);
            assert!(o.not_modified);
        })
    });
    group.finish();
}

fn scale(c: &mut Criterion) {
    let n: usize = std::env::var("SCHEMAWATCH_BENCH_WATCHES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let addr = server();
    let started = std::time::Instant::now();
    let mut s = setup(addr, n);
    eprintln!("scale: registered {n} watches in {:?}", started.elapsed());
    let mut group = c.benchmark_group("scale");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.bench_function(format!("{n} watches, one unchanged pass"), |b| {
        b.iter(|| {
            for w in &s.config.watches {
                let o = s.rt.block_on(refresh(&mut s.registry, w, 100));
                assert_eq!(o.action, Action::Unchanged);
            }
        })
    });
    group.finish();
}

criterion_group!(benches, unchanged_cycle, scale);
criterion_main!(benches);
