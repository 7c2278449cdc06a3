use std::rc::Rc;

/// Holds an Rc across an await.
#[presa::tool]
async fn not_send() -> String {
    let rc = Rc::new(1);
    tokio::task::yield_now().await;
    rc.to_string()
}

fn main() {}
