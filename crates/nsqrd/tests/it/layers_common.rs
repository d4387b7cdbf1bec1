//! Test client for the connection layers: IDENTIFY with feature negotiation, then TLS
//! (rustls), snappy (framed) or deflate (raw) on top of the socket, as go-nsq and pynsq stack
//! them. Every byte that crosses the socket is also recorded, so a test can check that the
//! traffic really was encrypted or compressed. Blocking std IO with read timeouts, like
//! `common`.
use std::cell::RefCell;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

use crate::common::{Frame, FRAME_ERROR, FRAME_MESSAGE, FRAME_RESPONSE, READ_TIMEOUT};

/// A file of `tests/fixtures/tls`.
pub fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/tls")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

/// The TLS flags of a server using the fixtures.
pub fn tls_flags() -> Vec<String> {
    vec![
        format!("--tls-cert={}", fixture("server.pem")),
        format!("--tls-key={}", fixture("server.key")),
        format!("--tls-root-ca-file={}", fixture("ca.pem")),
    ]
}

pub fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// How the test client does TLS.
#[derive(Clone, Default)]
pub struct TlsClient {
    /// `client` or `rogue` (a self-signed one): files `<name>.pem` / `<name>.key`.
    pub cert: Option<&'static str>,
    /// Offer only TLS 1.2.
    pub tls12_only: bool,
}

impl TlsClient {
    pub fn config(&self) -> Arc<rustls::ClientConfig> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        for c in CertificateDer::pem_file_iter(fixture("ca.pem")).unwrap() {
            roots.add(c.unwrap()).unwrap();
        }
        let versions: &[&rustls::SupportedProtocolVersion] = if self.tls12_only {
            &[&rustls::version::TLS12]
        } else {
            rustls::ALL_VERSIONS
        };
        let b = rustls::ClientConfig::builder_with_provider(provider)
            .with_protocol_versions(versions)
            .unwrap()
            .with_root_certificates(roots);
        let cfg = match self.cert {
            None => b.with_no_client_auth(),
            Some(name) => {
                let certs = CertificateDer::pem_file_iter(fixture(&format!("{name}.pem")))
                    .unwrap()
                    .map(|c| c.unwrap())
                    .collect();
                let key = PrivateKeyDer::from_pem_file(fixture(&format!("{name}.key"))).unwrap();
                b.with_client_auth_cert(certs, key).unwrap()
            }
        };
        Arc::new(cfg)
    }
}

/// The (possibly encrypted) stream, shared by the reading and writing halves.
pub struct Tap {
    pub stream: Box<dyn ReadWrite>,
}

pub trait ReadWrite: Read + Write {}
impl<T: Read + Write> ReadWrite for T {}

#[derive(Clone)]
pub struct Shared(pub Rc<RefCell<Tap>>);

impl Read for Shared {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().stream.read(buf)
    }
}

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().stream.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.borrow_mut().stream.flush()
    }
}

/// A V2 client whose reads and writes go through the negotiated layers.
pub struct Client {
    pub tcp: TcpStream,
    reader: Box<dyn Read>,
    writer: Box<dyn Write>,
    /// The IDENTIFY reply.
    pub identify: serde_json::Value,
    sent: Rc<RefCell<Vec<u8>>>,
    received: Rc<RefCell<Vec<u8>>>,
}

/// Encrypted socket: rustls over the raw TCP stream (recorded by the tap under it).
struct TlsOver {
    conn: rustls::ClientConnection,
    sock: RawTap,
}

/// Records raw socket bytes into the shared tap while TLS sits above.
struct RawTap {
    tcp: TcpStream,
    raw_in: Rc<RefCell<Vec<u8>>>,
    raw_out: Rc<RefCell<Vec<u8>>>,
}

impl Read for RawTap {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.tcp.read(buf)?;
        self.raw_in.borrow_mut().extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

impl Write for RawTap {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.tcp.write(buf)?;
        self.raw_out.borrow_mut().extend_from_slice(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.tcp.flush()
    }
}

impl Read for TlsOver {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        rustls::Stream::new(&mut self.conn, &mut self.sock).read(buf)
    }
}

impl Write for TlsOver {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        rustls::Stream::new(&mut self.conn, &mut self.sock).write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        rustls::Stream::new(&mut self.conn, &mut self.sock).flush()
    }
}

/// Bytes that crossed the socket, in each direction, below every layer.
pub struct Raw {
    pub sent: Vec<u8>,
    pub received: Vec<u8>,
}

/// Writes through a compressor and flushes it after every write (each command goes out whole).
struct FlushEach<W: Write>(W);

impl<W: Write> Write for FlushEach<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.write_all(buf)?;
        self.0.flush()?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.0.flush()
    }
}

pub fn read_frame_from(r: &mut dyn Read) -> Option<Frame> {
    let mut hdr = [0u8; 8];
    r.read_exact(&mut hdr).ok()?;
    let size = i32::from_be_bytes([hdr[0], hdr[1], hdr[2], hdr[3]]);
    let ftype = i32::from_be_bytes([hdr[4], hdr[5], hdr[6], hdr[7]]);
    let mut data = vec![0u8; (size - 4).max(0) as usize];
    r.read_exact(&mut data).ok()?;
    Some(match ftype {
        FRAME_RESPONSE => Frame::Response(data),
        FRAME_ERROR => Frame::Error(String::from_utf8_lossy(&data).into_owned()),
        FRAME_MESSAGE => {
            let mut id = [0u8; 16];
            id.copy_from_slice(&data[10..26]);
            Frame::Message(crate::common::Msg {
                timestamp: i64::from_be_bytes(data[0..8].try_into().unwrap()),
                attempts: u16::from_be_bytes([data[8], data[9]]),
                id,
                body: data[26..].to_vec(),
            })
        }
        t => panic!("unknown frame type {t}"),
    })
}

pub fn cmd_bytes(line: &str, body: Option<&[u8]>) -> Vec<u8> {
    let mut v = line.as_bytes().to_vec();
    v.push(b'\n');
    if let Some(b) = body {
        v.extend_from_slice(&(b.len() as i32).to_be_bytes());
        v.extend_from_slice(b);
    }
    v
}

impl Client {
    /// Connect, send the magic and IDENTIFY `extra` JSON fields with feature negotiation, then
    /// stack whatever the server granted. Errors (a refused handshake) come back as text.
    pub fn connect(
        addr: std::net::SocketAddr,
        extra: &str,
        tls: &TlsClient,
    ) -> Result<Client, String> {
        let tcp = TcpStream::connect(addr).map_err(|e| e.to_string())?;
        tcp.set_read_timeout(Some(READ_TIMEOUT)).unwrap();
        tcp.set_nodelay(true).unwrap();
        let sep = if extra.is_empty() { "" } else { "," };
        let body = format!(r#"{{"feature_negotiation":true{sep}{extra}}}"#);
        let mut plain = tcp.try_clone().unwrap();
        let mut first = b"  V2".to_vec();
        first.extend(cmd_bytes("IDENTIFY", Some(body.as_bytes())));
        plain.write_all(&first).unwrap();
        let identify = match read_frame_from(&mut plain) {
            Some(Frame::Response(b)) => serde_json::from_slice::<serde_json::Value>(&b)
                .map_err(|e| format!("bad reply {e}: {}", String::from_utf8_lossy(&b)))?,
            other => return Err(format!("IDENTIFY: {other:?}")),
        };
        let sent = Rc::new(RefCell::new(first));
        let received = Rc::new(RefCell::new(Vec::new()));
        let raw = RawTap {
            tcp: tcp.try_clone().unwrap(),
            raw_in: Rc::clone(&received),
            raw_out: Rc::clone(&sent),
        };
        let stream: Box<dyn ReadWrite> = if identify["tls_v1"] == true {
            let name = ServerName::try_from("127.0.0.1").unwrap();
            let conn = rustls::ClientConnection::new(tls.config(), name).unwrap();
            let mut t = TlsOver { conn, sock: raw };
            match read_frame_from(&mut t) {
                Some(Frame::Response(b)) if b == b"OK" => {}
                other => return Err(format!("TLS upgrade: {other:?}")),
            }
            Box::new(t)
        } else {
            Box::new(raw)
        };
        let tap = Shared(Rc::new(RefCell::new(Tap { stream })));
        let (mut reader, writer): (Box<dyn Read>, Box<dyn Write>) = if identify["snappy"] == true {
            (
                Box::new(snap::read::FrameDecoder::new(tap.clone())),
                Box::new(FlushEach(snap::write::FrameEncoder::new(tap.clone()))),
            )
        } else if identify["deflate"] == true {
            let level = identify["deflate_level"].as_u64().unwrap_or(6) as u32;
            (
                // Decode into a large buffer: flate2 keeps output it could not hand over and
                // would block on the socket for more input before returning it.
                Box::new(std::io::BufReader::with_capacity(
                    64 * 1024,
                    flate2::read::DeflateDecoder::new(tap.clone()),
                )),
                Box::new(FlushEach(flate2::write::DeflateEncoder::new(
                    tap.clone(),
                    flate2::Compression::new(level),
                ))),
            )
        } else {
            (Box::new(tap.clone()), Box::new(tap))
        };
        if identify["snappy"] == true || identify["deflate"] == true {
            match read_frame_from(&mut reader) {
                Some(Frame::Response(b)) if b == b"OK" => {}
                other => return Err(format!("compression upgrade: {other:?}")),
            }
        }
        Ok(Client {
            tcp,
            reader,
            writer,
            identify,
            sent,
            received,
        })
    }

    /// What crossed the socket so far, below every layer.
    pub fn raw(&self) -> Raw {
        Raw {
            sent: self.sent.borrow().clone(),
            received: self.received.borrow().clone(),
        }
    }

    pub fn write(&mut self, b: &[u8]) {
        self.writer.write_all(b).expect("write");
        self.writer.flush().expect("flush");
    }

    pub fn cmd(&mut self, line: &str) {
        self.write(&cmd_bytes(line, None));
    }

    pub fn cmd_body(&mut self, line: &str, body: &[u8]) {
        self.write(&cmd_bytes(line, Some(body)));
    }

    pub fn try_read_frame(&mut self) -> Option<Frame> {
        read_frame_from(&mut self.reader)
    }

    /// The next frame that is not a heartbeat.
    pub fn read_frame(&mut self) -> Frame {
        loop {
            let f = self.try_read_frame().expect("expected a frame");
            if f != Frame::Response(b"_heartbeat_".to_vec()) {
                return f;
            }
        }
    }

    pub fn expect_ok(&mut self) {
        assert_eq!(self.read_frame(), Frame::Response(b"OK".to_vec()));
    }

    pub fn publish(&mut self, topic: &str, body: &[u8]) {
        self.cmd_body(&format!("PUB {topic}"), body);
        self.expect_ok();
    }

    pub fn sub(&mut self, topic: &str, channel: &str) {
        self.cmd(&format!("SUB {topic} {channel}"));
        self.expect_ok();
    }

    pub fn expect_message(&mut self) -> crate::common::Msg {
        match self.read_frame() {
            Frame::Message(m) => m,
            other => panic!("expected a message, got {other:?}"),
        }
    }

    /// This connection's local address, as `/stats` shows it in `remote_address`.
    pub fn local_addr(&self) -> String {
        self.tcp.local_addr().unwrap().to_string()
    }
}

/// True if `needle` occurs in `hay`.
pub fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}
