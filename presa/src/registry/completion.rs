//! Completion providers: functions attached to a prompt argument or a resource template
//! variable that drive `completion/complete`.

use super::BoxFuture;
use crate::context::RequestContext;
use crate::error::Error;
use crate::wire::types::Completion;
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

/// One completion request, as a provider receives it.
#[derive(Debug)]
#[non_exhaustive]
pub struct CompletionRequest {
    /// The argument or variable being completed.
    pub argument: String,
    /// What the user typed so far.
    pub value: String,
    /// Values of other arguments already given.
    pub context: HashMap<String, String>,
    /// The request context.
    pub ctx: RequestContext,
}

pub(crate) type CompletionHandler =
    Arc<dyn Fn(CompletionRequest) -> BoxFuture<Result<Completion, Error>> + Send + Sync>;

pub(crate) fn completion_handler<F, Fut>(f: F) -> CompletionHandler
where
    F: Fn(CompletionRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Completion, Error>> + Send + 'static,
{
    Arc::new(move |req| Box::pin(f(req)))
}
