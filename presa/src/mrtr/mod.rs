//! Multi round-trip requests (wire section 10): a handler asks the client for input
//! (elicitation, sampling, roots) and presa answers `input_required`; the client retries
//! with the answers and the signed `requestState`, and the same handler runs again, now
//! seeing every answer given so far in this call.
//!
//! Only `tools/call`, `resources/read` and `prompts/get` may answer `input_required`.

pub mod contract;
pub mod inputs;
pub(crate) mod round;
pub mod token;

pub use inputs::{
    Ask, ElicitForm, Elicitation, FormEnum, FormField, InputRequired, Root, SamplingMessage,
    SamplingRequest, SamplingResponse, UrlElicitation,
};
pub use token::{Keyring, MemoryReplayStore, ReplayError, ReplayFuture, ReplayStore, StateKey};
