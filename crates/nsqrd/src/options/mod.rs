//! nsqd's options: the 57 flags of the reference (§1), the `--config` TOML file (§1.12),
//! startup validation (§1.13) and `/config/:opt` (§12.4).

mod duration;
mod types;

pub use duration::{format as format_go_duration, parse as parse_go_duration, DurationError};
pub use types::{LogLevel, TlsRequired, TLS_1_0, TLS_1_1, TLS_1_2, TLS_1_3};
