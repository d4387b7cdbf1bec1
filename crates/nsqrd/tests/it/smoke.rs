//! The harness itself works: a server starts, answers /ping, accepts the V2 magic.
use crate::common::*;

#[test]
fn ping_and_nop() {
    let s = Server::start(&[]);
    let r = s.get("/ping");
    assert_eq!(r.status, 200);
    assert_eq!(r.text(), "OK");
    let mut c = s.connect();
    c.cmd("NOP");
    c.publish("smoke", b"hello");
}
