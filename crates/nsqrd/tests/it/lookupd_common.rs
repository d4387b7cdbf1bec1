//! A scripted stand-in for nsqlookupd, for the registration tests (`lookupd_*.rs`): it records
//! every connection and command an nsqd sends and answers as lookupd does, or misbehaves on purpose
//! (garbage replies, silence), so each test can assert the exact conversation against nsqrd and the
//! reference nsqd alike. Its HTTP side answers `GET /channels?topic=` from a table the test fills
//! (channel pre-creation).
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// What the fake saw, in order.
#[derive(Debug, Clone, PartialEq)]
pub enum Seen {
    /// A connection sent the magic; the number counts connections from 1.
    Connected(usize),
    /// A command line (without `\n`); IDENTIFY carries its JSON body.
    Command(usize, String, Option<serde_json::Value>),
    Closed(usize),
}

/// How the fake answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Mode {
    /// As lookupd: IDENTIFY gets lookupd's JSON, everything else `OK`.
    Normal = 0,
    /// Every reply is a framed non-JSON blob.
    Garbage = 1,
    /// Never reply.
    Silent = 2,
    /// Replies IDENTIFY normally; `/channels` answers only once released
    /// (`FakeLookupd::release_http`), at the latest after 60 s.
    SlowHttp = 3,
}

pub struct FakeLookupd {
    pub tcp: SocketAddr,
    seen: Mutex<mpsc::Receiver<Seen>>,
    mode: Arc<AtomicU8>,
    conns: Arc<Mutex<Vec<TcpStream>>>,
    /// topic -> channels answered by `/channels`.
    pub channels: Arc<Mutex<HashMap<String, Vec<String>>>>,
    /// `/channels` requests served, by topic.
    pub channel_queries: Arc<Mutex<Vec<String>>>,
    /// Set by `release_http`: held `/channels` answers go out.
    released: Arc<(Mutex<bool>, std::sync::Condvar)>,
}

fn framed(b: &[u8]) -> Vec<u8> {
    let mut v = (b.len() as i32).to_be_bytes().to_vec();
    v.extend_from_slice(b);
    v
}

impl FakeLookupd {
    pub fn start(mode: Mode) -> FakeLookupd {
        let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
        let http = TcpListener::bind("127.0.0.1:0").unwrap();
        let (tcp_addr, http_addr) = (tcp.local_addr().unwrap(), http.local_addr().unwrap());
        let (tx, rx) = mpsc::channel();
        let mode = Arc::new(AtomicU8::new(mode as u8));
        let conns = Arc::new(Mutex::new(Vec::new()));
        let channels = Arc::new(Mutex::new(HashMap::new()));
        let queries = Arc::new(Mutex::new(Vec::new()));
        let released = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
        {
            let (mode, conns) = (Arc::clone(&mode), Arc::clone(&conns));
            std::thread::spawn(move || {
                let n = AtomicUsize::new(0);
                for s in tcp.incoming().map_while(Result::ok) {
                    let id = n.fetch_add(1, Ordering::Relaxed) + 1;
                    conns.lock().unwrap().push(s.try_clone().unwrap());
                    let (tx, mode) = (tx.clone(), Arc::clone(&mode));
                    std::thread::spawn(move || serve_tcp(s, id, http_addr, &tx, &mode));
                }
            });
        }
        {
            let (mode, channels, queries, released) = (
                Arc::clone(&mode),
                Arc::clone(&channels),
                Arc::clone(&queries),
                Arc::clone(&released),
            );
            std::thread::spawn(move || {
                for s in http.incoming().map_while(Result::ok) {
                    let (mode, channels, queries, released) = (
                        Arc::clone(&mode),
                        Arc::clone(&channels),
                        Arc::clone(&queries),
                        Arc::clone(&released),
                    );
                    std::thread::spawn(move || {
                        serve_http(s, &mode, &channels, &queries, &released)
                    });
                }
            });
        }
        FakeLookupd {
            tcp: tcp_addr,
            seen: Mutex::new(rx),
            mode,
            conns,
            channels,
            channel_queries: queries,
            released,
        }
    }

    /// Let held `/channels` answers (`Mode::SlowHttp`) go out.
    pub fn release_http(&self) {
        let (flag, cv) = &*self.released;
        *flag.lock().unwrap() = true;
        cv.notify_all();
    }

    /// The `--lookupd-tcp-address` flag for this fake.
    pub fn flag(&self) -> String {
        format!("--lookupd-tcp-address={}", self.tcp)
    }

    pub fn set_mode(&self, m: Mode) {
        self.mode.store(m as u8, Ordering::Relaxed);
    }

    /// Close every connection (as a lookupd restart would).
    pub fn drop_connections(&self) {
        for c in self.conns.lock().unwrap().drain(..) {
            let _ = c.shutdown(Shutdown::Both);
        }
    }

    /// The next event within `t`.
    pub fn next(&self, t: Duration) -> Option<Seen> {
        self.seen.lock().unwrap().recv_timeout(t).ok()
    }

    /// Events until one matches `pred` (returned last); panics after `t`.
    #[track_caller]
    pub fn until(&self, t: Duration, what: &str, pred: impl Fn(&Seen) -> bool) -> Vec<Seen> {
        let deadline = Instant::now() + t;
        let mut got = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.next(left) {
                Some(ev) => {
                    let hit = pred(&ev);
                    got.push(ev);
                    if hit {
                        return got;
                    }
                }
                None => panic!("no {what} within {t:?}; saw {got:#?}"),
            }
        }
    }

    /// Command lines until `line` arrives; returns them (IDENTIFY bodies dropped).
    #[track_caller]
    pub fn lines_until(&self, line: &str) -> Vec<String> {
        self.until(
            Duration::from_secs(5),
            line,
            |e| matches!(e, Seen::Command(_, l, _) if l == line),
        )
        .into_iter()
        .filter_map(|e| match e {
            Seen::Command(_, l, _) => Some(l),
            _ => None,
        })
        .collect()
    }

    /// Everything seen within `t` (for asserting that nothing more arrives).
    pub fn drain(&self, t: Duration) -> Vec<Seen> {
        let deadline = Instant::now() + t;
        let mut got = Vec::new();
        while let Some(e) = self.next(deadline.saturating_duration_since(Instant::now())) {
            got.push(e);
        }
        got
    }
}

fn serve_tcp(s: TcpStream, id: usize, http: SocketAddr, tx: &mpsc::Sender<Seen>, mode: &AtomicU8) {
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    let mut magic = [0u8; 4];
    if r.read_exact(&mut magic).is_err() || &magic != b"  V1" {
        let _ = tx.send(Seen::Closed(id));
        return;
    }
    let _ = tx.send(Seen::Connected(id));
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        let line = line.trim_end_matches('\n').to_string();
        let mut body = None;
        if line == "IDENTIFY" {
            let mut size = [0u8; 4];
            if r.read_exact(&mut size).is_err() {
                break;
            }
            let mut b = vec![0u8; i32::from_be_bytes(size).max(0) as usize];
            if r.read_exact(&mut b).is_err() {
                break;
            }
            body = serde_json::from_slice(&b).ok();
        }
        let identify = line == "IDENTIFY";
        let _ = tx.send(Seen::Command(id, line, body));
        let reply = match mode.load(Ordering::Relaxed) {
            1 => framed(b"\x00garbage{"),
            2 => continue,
            _ if identify => framed(
                format!(
                    r#"{{"tcp_port":{},"http_port":{},"version":"1.3.0","broadcast_address":"127.0.0.1","hostname":"fake"}}"#,
                    http.port() - 1,
                    http.port()
                )
                .as_bytes(),
            ),
            _ => framed(b"OK"),
        };
        if w.write_all(&reply).is_err() {
            break;
        }
    }
    let _ = tx.send(Seen::Closed(id));
}

fn serve_http(
    s: TcpStream,
    mode: &AtomicU8,
    channels: &Mutex<HashMap<String, Vec<String>>>,
    queries: &Mutex<Vec<String>>,
    released: &(Mutex<bool>, std::sync::Condvar),
) {
    let mut w = s.try_clone().unwrap();
    let mut r = BufReader::new(s);
    let mut request = String::new();
    if r.read_line(&mut request).is_err() {
        return;
    }
    loop {
        let mut h = String::new();
        if r.read_line(&mut h).unwrap_or(0) == 0 || h == "\r\n" {
            break;
        }
    }
    let path = request.split_whitespace().nth(1).unwrap_or("");
    let topic = path
        .strip_prefix("/channels?topic=")
        .unwrap_or("")
        .replace("%23", "#");
    queries.lock().unwrap().push(topic.clone());
    if mode.load(Ordering::Relaxed) == Mode::SlowHttp as u8 {
        let (flag, cv) = released;
        let held = flag.lock().unwrap();
        let _ = cv
            .wait_timeout_while(held, Duration::from_secs(60), |r| !*r)
            .unwrap();
    }
    let list = channels
        .lock()
        .unwrap()
        .get(&topic)
        .cloned()
        .unwrap_or_default();
    let body = serde_json::json!({ "channels": list }).to_string();
    let _ = write!(
        w,
        "HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\nX-Nsq-Content-Type: nsq; version=1.0\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}
