use crate::cli::BenchArgs;
use crate::client::Result;
pub async fn run(_a: &BenchArgs) -> Result<bool> {
    Ok(true)
}
