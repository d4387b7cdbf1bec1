//! The Go `net/http` + httprouter conventions nsqd and nsqlookupd share, which nsqrd and
//! nsqrlookupd reproduce by hand so status codes, headers and bodies match what NSQ clients
//! expect: path decoding and redirects (`path`), query parsing (`query`), the router rules
//! (`router`), the V1 response shapes (`response`) and the per-connection hyper setup
//! (`server`) with its time limits (`deadline`), and the client side of the requests nsqd and
//! its clients send (`client`). Each daemon keeps its route table, its
//! handlers, and the few answers where the two differ.

pub mod client;
pub mod deadline;
pub mod path;
pub mod query;
pub mod response;
pub mod router;
pub mod server;
