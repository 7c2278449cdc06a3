//! One round of a multi round-trip request: opening it (the signed `requestState` a retry
//! brings, verified, and the answers given so far) before the handler runs, and closing
//! it after (the handler's own result, or `input_required` with every input it still
//! needs and a freshly sealed state).

use super::inputs;
use super::token::{self, BindingText, Keyring, ReplayStore};
use crate::context::{InputsOutcome, RequestContext};
use crate::error::{Error, code};
use crate::shape::Shaper;
use crate::wire::jsonrpc::RequestParams;
use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// Where request state is sealed and opened: the keys, the record of single-use states
/// already spent, how long a state lives, and the audience it is sealed for.
pub(crate) struct Seals {
    pub(crate) keys: Keyring,
    pub(crate) replay: Arc<dyn ReplayStore>,
    pub(crate) ttl: Duration,
    /// The server's name: a state sealed by one server is refused by another.
    pub(crate) audience: String,
}

/// The multi round-trip state a request arrives with.
#[derive(Default)]
pub(crate) struct Round {
    /// The answers given so far (none on a first call: no map is made for it).
    pub(crate) answers: Option<Map<String, Value>>,
    /// The handler's state carried in from the previous round.
    pub(crate) carried: Option<Value>,
    /// Whether the request is a retry (carries `inputResponses` or `requestState`).
    pub(crate) retry: bool,
    /// The spending of a single-use state, which the caller awaits before the handler
    /// runs (none for a request without one: most requests never wait here).
    pub(crate) spend: Option<Spend>,
}

/// The check that a single-use state is used for the first time, recording its use: the
/// round's error when the state was spent before (the same -32602 as any bad state) or
/// the replay store failed (a retryable -32603, the state never taken as unused).
pub(crate) type Spend = Pin<Box<dyn Future<Output = Result<(), Error>> + Send>>;

impl Seals {
    /// Opens the round of a request of `method`: checks the shapes of `inputResponses`
    /// and `requestState`, verifies the state (bound to the method, the params and the
    /// principal), and gathers the answers. A single-use state is not yet checked against
    /// the replay record: the round's [`Spend`] does that, for the caller to await.
    pub(crate) fn open(
        &self,
        method: &str,
        params: &RequestParams,
        principal: Option<&str>,
    ) -> Result<Round, Error> {
        let responses = params.get("inputResponses");
        let state = params.get("requestState");
        check_shapes(responses, state)?;
        let mut round = Round {
            retry: responses.is_some() || state.is_some(),
            ..Round::default()
        };
        if let Some(Value::String(state)) = state {
            let bind = token::binding(method, params, principal);
            let payload = self
                .keys
                .open(state, &self.audience, &bind)
                .inspect_err(|_| crate::observe::state_failure("open"))?;
            // This round's span follows from the one that asked for the input.
            if let Some(tp) = &payload.tp {
                crate::observe::link(&crate::observe::current(), tp);
            }
            if payload.once {
                round.spend = Some(self.spend(payload.jti, payload.exp));
            }
            round.answers = Some(payload.answers);
            round.carried = payload.data;
        }
        // An answer the signed state already holds (taken in an earlier round) stands
        // over a different one sent again: the client cannot rewrite what the handler
        // acted on. (Answers sent without a state, on a first call, are taken as given:
        // a handler that must know a step was confirmed before reads its carried state.)
        if let Some(Value::Object(responses)) = responses {
            let answers = round.answers.get_or_insert_default();
            for (k, v) in responses {
                answers.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        Ok(round)
    }

    /// The spending of the single-use state `id`, valid until `expires_at`.
    fn spend(&self, id: String, expires_at: u64) -> Spend {
        let replay = Arc::clone(&self.replay);
        Box::pin(async move {
            match replay.first_use(&id, expires_at).await {
                Ok(true) => Ok(()),
                Ok(false) => {
                    crate::observe::state_failure("open");
                    Err(token::invalid())
                }
                Err(fault) => {
                    tracing::error!("a single-use request state could not be checked: {fault}");
                    Err(Error::retryable(
                        "The record of spent request state is unavailable; try again",
                    ))
                }
            }
        })
    }

    /// The `input_required` result: the capability check of section 10.2 first (-32021
    /// with the merged requirements), then every missing input and a fresh signed state.
    fn input_required(
        &self,
        shaper: &Shaper,
        outcome: InputsOutcome,
        bind: String,
    ) -> Result<String, Error> {
        if outcome.missing.is_empty() {
            tracing::error!("a handler demanded an input it never asked for");
            return Err(Error::internal());
        }
        let mut required = Map::new();
        for (_, _, needs) in &outcome.missing {
            if let Some(n) = needs {
                inputs::merge(&mut required, n);
            }
        }
        if !required.is_empty() {
            return Err(Error::missing_client_capability(Value::Object(required)));
        }
        let payload = token::Payload {
            aud: self.audience.clone(),
            bind,
            answers: outcome.accepted,
            data: outcome.carry,
            once: outcome.single_use,
            // Called inside the request's span: the next round links to it.
            tp: crate::observe::traceparent_of(&crate::observe::current()),
            ..Default::default()
        };
        let state = self
            .keys
            .seal(payload, self.ttl)
            .inspect_err(|_| crate::observe::state_failure("seal"))?;
        let requests: Map<String, Value> = outcome
            .missing
            .into_iter()
            .map(|(k, request, _)| (k, request))
            .collect();
        let mut result = Map::new();
        result.insert("resultType".into(), Value::from("input_required"));
        result.insert("inputRequests".into(), Value::Object(requests));
        result.insert("requestState".into(), Value::from(state));
        shaper.object(result)
    }
}

/// The structural checks of `inputResponses` and `requestState` (wire section 10.3).
fn check_shapes(responses: Option<&Value>, state: Option<&Value>) -> Result<(), Error> {
    match responses {
        None => {}
        Some(Value::Object(m)) if !m.values().all(Value::is_object) => {
            return Err(Error::invalid_params(
                "inputResponses must map string IDs to bare result objects",
            ));
        }
        Some(Value::Object(_)) => {}
        Some(_) => return Err(Error::invalid_params("inputResponses must be an object")),
    }
    if state.is_some_and(|s| !s.is_string()) {
        return Err(Error::invalid_params("requestState must be a string"));
    }
    Ok(())
}

/// What closing a request's round needs once its handler has run.
pub(crate) struct Closing {
    /// The request's context (its asks, its held notifications).
    pub(crate) ctx: RequestContext,
    /// Whether the method may answer `input_required`.
    pub(crate) mrtr: bool,
    /// The binding of a request state, when the handler may ask for input.
    pub(crate) bound: Option<BindingText>,
}

impl Closing {
    /// The answer once the handler has run: its result, or `input_required` when it
    /// asked for input it was not given. Held notifications are released once the answer
    /// is known not to be an error that needs its own HTTP status.
    pub(crate) fn close(
        self,
        seals: &Seals,
        shaper: &Shaper,
        result: Result<String, Error>,
    ) -> Result<String, Error> {
        let Closing { ctx, mrtr, bound } = self;
        match end_round(&ctx, result) {
            RoundEnd::Answer(answer) => answer,
            RoundEnd::NeedsInput(outcome) => {
                let Some(bind) = bound.map(|text| text.digest()) else {
                    if mrtr {
                        tracing::error!("a tool declared with asks_input(false) asked for input");
                    }
                    return Err(Error::new(
                        code::INTERNAL_ERROR,
                        "Input-required result is not permitted for this operation",
                    ));
                };
                let answer = seals.input_required(shaper, outcome, bind);
                if answer.is_ok() {
                    ctx.release_held();
                }
                answer
            }
        }
    }
}

/// What one round of a handler came to.
pub(crate) enum RoundEnd {
    /// The request's answer: the handler's result, or the failure of one of its asks.
    Answer(Result<String, Error>),
    /// The handler demanded input it was not given: these are its asks.
    NeedsInput(InputsOutcome),
}

/// What a handler's round came to, from its result and its asks. Notifications held for
/// the outcome are released with an answer (a `NeedsInput` keeps them until the caller
/// knows what it answers).
pub(crate) fn end_round(ctx: &RequestContext, result: Result<String, Error>) -> RoundEnd {
    // A handler that asked nothing (most) has no outcome to read.
    if !ctx.inputs().asked() {
        if result.is_ok() {
            ctx.release_held();
        }
        return RoundEnd::Answer(result);
    }
    let outcome = ctx.inputs_outcome();
    if let Some(failure) = outcome.failure {
        return RoundEnd::Answer(Err(failure));
    }
    if !outcome.demanded {
        if result.is_ok() {
            ctx.release_held();
        }
        return RoundEnd::Answer(result);
    }
    RoundEnd::NeedsInput(outcome)
}
