//! Helpers shared by the HTTP acceptance tests (`http_*.rs`): assertions on the V1 response
//! conventions and an order-preserving JSON reader, because `serde_json::Value` sorts object
//! keys and the key order of nsqd's JSON is part of the contract.
use crate::common::*;

/// The header every V1 endpoint sets.
pub const V1_HEADER: &str = "nsq; version=1.0";
pub const JSON_CT: &str = "application/json; charset=utf-8";
pub const TEXT_CT: &str = "text/plain; charset=utf-8";

/// Assert a V1 error response: status, body exactly `{"message":"<msg>"}`, JSON content type and
/// the X-NSQ-Content-Type header.
#[track_caller]
pub fn assert_err(r: &HttpResponse, status: u16, msg: &str) {
    assert_eq!(
        (r.status, r.text()),
        (status, format!("{{\"message\":\"{msg}\"}}")),
        "expected {status} {msg}"
    );
    assert_eq!(
        r.header("Content-Type"),
        Some(JSON_CT),
        "content type of {msg}"
    );
    assert_eq!(
        r.header("X-NSQ-Content-Type"),
        Some(V1_HEADER),
        "X-NSQ header of {msg}"
    );
}

/// Assert a V1 success with no payload: 200, empty body, no Content-Type.
#[track_caller]
pub fn assert_empty_ok(r: &HttpResponse) {
    assert_eq!(
        (r.status, r.text()),
        (200, String::new()),
        "expected 200 with empty body"
    );
    assert_eq!(r.header("X-NSQ-Content-Type"), Some(V1_HEADER));
    assert_eq!(
        r.header("Content-Type"),
        None,
        "empty success has no content type"
    );
}

/// Assert a V1 success with a plain-text payload.
#[track_caller]
pub fn assert_text_ok(r: &HttpResponse, text: &str) {
    assert_eq!((r.status, r.text()), (200, text.to_string()));
    assert_eq!(r.header("X-NSQ-Content-Type"), Some(V1_HEADER));
    assert_eq!(r.header("Content-Type"), Some(TEXT_CT));
}

/// A JSON value that keeps object keys in document order.
#[derive(Debug, Clone, PartialEq)]
pub enum OJson {
    Null,
    Bool(bool),
    Num(String),
    Str(String),
    Arr(Vec<OJson>),
    Obj(Vec<(String, OJson)>),
}

impl OJson {
    /// Parse `raw`; panics on malformed JSON.
    pub fn parse(raw: &[u8]) -> OJson {
        let text = std::str::from_utf8(raw).expect("utf-8 json");
        let mut p = Parser {
            s: text.as_bytes(),
            i: 0,
        };
        let v = p.value();
        p.ws();
        assert_eq!(p.i, p.s.len(), "trailing data after JSON: {text}");
        v
    }

    /// Object keys in document order (panics if not an object).
    pub fn keys(&self) -> Vec<&str> {
        match self {
            OJson::Obj(m) => m.iter().map(|(k, _)| k.as_str()).collect(),
            other => panic!("not an object: {other:?}"),
        }
    }

    /// Member `k` of an object (panics if absent).
    pub fn get(&self, k: &str) -> &OJson {
        match self {
            OJson::Obj(m) => m
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v)
                .unwrap_or_else(|| panic!("no key {k} in {self:?}")),
            other => panic!("not an object: {other:?}"),
        }
    }

    /// Element `i` of an array.
    pub fn at(&self, i: usize) -> &OJson {
        match self {
            OJson::Arr(a) => &a[i],
            other => panic!("not an array: {other:?}"),
        }
    }
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.i < self.s.len() && matches!(self.s[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) {
        self.ws();
        assert_eq!(
            self.s.get(self.i),
            Some(&c),
            "expected {:?} at {}",
            c as char,
            self.i
        );
        self.i += 1;
    }

    fn value(&mut self) -> OJson {
        self.ws();
        match self.s.get(self.i).copied() {
            Some(b'{') => {
                self.i += 1;
                let mut m = Vec::new();
                self.ws();
                if self.s[self.i] == b'}' {
                    self.i += 1;
                    return OJson::Obj(m);
                }
                loop {
                    self.ws();
                    let k = self.string();
                    self.eat(b':');
                    let v = self.value();
                    m.push((k, v));
                    self.ws();
                    let c = self.s[self.i];
                    self.i += 1;
                    match c {
                        b',' => continue,
                        b'}' => return OJson::Obj(m),
                        _ => panic!("bad object at {}", self.i),
                    }
                }
            }
            Some(b'[') => {
                self.i += 1;
                let mut a = Vec::new();
                self.ws();
                if self.s[self.i] == b']' {
                    self.i += 1;
                    return OJson::Arr(a);
                }
                loop {
                    a.push(self.value());
                    self.ws();
                    let c = self.s[self.i];
                    self.i += 1;
                    match c {
                        b',' => continue,
                        b']' => return OJson::Arr(a),
                        _ => panic!("bad array at {}", self.i),
                    }
                }
            }
            Some(b'"') => OJson::Str(self.string()),
            Some(b't') => self.word("true", OJson::Bool(true)),
            Some(b'f') => self.word("false", OJson::Bool(false)),
            Some(b'n') => self.word("null", OJson::Null),
            Some(_) => {
                let st = self.i;
                while self.i < self.s.len()
                    && matches!(
                        self.s[self.i],
                        b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'
                    )
                {
                    self.i += 1;
                }
                assert!(self.i > st, "bad value at {st}");
                OJson::Num(String::from_utf8_lossy(&self.s[st..self.i]).into_owned())
            }
            None => panic!("unexpected end of JSON"),
        }
    }

    fn word(&mut self, w: &str, v: OJson) -> OJson {
        assert!(
            self.s[self.i..].starts_with(w.as_bytes()),
            "bad literal at {}",
            self.i
        );
        self.i += w.len();
        v
    }

    fn string(&mut self) -> String {
        let st = self.i;
        assert_eq!(self.s[self.i], b'"', "expected string at {st}");
        self.i += 1;
        while self.s[self.i] != b'"' {
            if self.s[self.i] == b'\\' {
                self.i += 1;
            }
            self.i += 1;
        }
        self.i += 1;
        // Let serde_json decode the escapes.
        serde_json::from_slice(&self.s[st..self.i]).expect("json string")
    }
}

/// GET `path` and parse it as order-preserving JSON (asserting 200).
pub fn get_ojson(s: &Server, path: &str) -> OJson {
    let r = s.get(path);
    assert_eq!(r.status, 200, "GET {path}: {}", r.text());
    OJson::parse(&r.body)
}

/// Subscribe a consumer to `topic`/`channel` with `RDY rdy`.
pub fn consumer(s: &Server, topic: &str, channel: &str, rdy: u32) -> Conn {
    let mut c = s.connect();
    c.sub(topic, channel);
    c.cmd(&format!("RDY {rdy}"));
    c
}
