//! How a [`TaskRecord`] becomes a row of a SQL store (SQLite, PostgreSQL): the columns
//! the stores query by, as the signed 64-bit integers both engines hold, beside the whole
//! record as JSON; and the status read back from its column.

use super::store::{StoreError, TaskRecord, TaskStatus};

/// A time or revision as a signed 64-bit column holds it; past `i64::MAX` is a fault
/// (no record presa makes comes near it).
pub(super) fn integer(value: u64, what: &str) -> Result<i64, StoreError> {
    i64::try_from(value).map_err(|_| {
        StoreError::Unavailable(format!("{what} {value} is past a 64-bit integer column"))
    })
}

/// A time (an instant compared with `expires_at`, or an expiry) as a 64-bit column holds
/// it: past `i64::MAX` is `i64::MAX` (no stored time is later than that).
pub(super) fn instant(now_ms: u64) -> i64 {
    i64::try_from(now_ms).unwrap_or(i64::MAX)
}

/// The row's columns of a record.
pub(super) struct Columns {
    pub(super) scope: String,
    pub(super) status: &'static str,
    pub(super) created_at: i64,
    /// `None`: the task never expires.
    pub(super) expires_at: Option<i64>,
    pub(super) revision: i64,
    /// When the lease of the run holding the task runs out; `None`: no run holds it.
    pub(super) lease_expires_at: Option<i64>,
    /// The whole record.
    pub(super) json: String,
}

impl Columns {
    /// The columns of `record`; a time or revision past the columns is a fault.
    pub(super) fn of(record: &TaskRecord) -> Result<Columns, StoreError> {
        let json = serde_json::to_string(record)
            .map_err(|e| StoreError::Unavailable(format!("a task record as JSON: {e}")))?;
        Ok(Columns {
            scope: record.scope.clone(),
            status: record.status.as_str(),
            created_at: integer(record.created_at, "created_at")?,
            // `TaskRecord::expired`: past created_at + ttl_ms, saturating.
            expires_at: record
                .ttl_ms
                .map(|ttl| instant(record.created_at.saturating_add(ttl))),
            revision: integer(record.revision, "revision")?,
            lease_expires_at: record.lease.as_ref().map(|l| instant(l.expires_at)),
            json,
        })
    }
}

/// The record a `record` column holds; one this build cannot read is a fault.
pub(super) fn parse(json: &str) -> Result<TaskRecord, StoreError> {
    serde_json::from_str(json)
        .map_err(|e| StoreError::Unavailable(format!("a stored task record is unreadable: {e}")))
}

/// The records of a `claimable` query: one this build cannot read is logged and left
/// out, so it never keeps the others from being claimed.
pub(super) fn claimable_records(json: &[String]) -> Vec<TaskRecord> {
    json.iter()
        .filter_map(|json| match parse(json) {
            Ok(record) => Some(record),
            Err(e) => {
                tracing::warn!("a task whose lease ran out is left alone: {e}");
                None
            }
        })
        .collect()
}

/// The status a status column holds; anything else is a fault of the database.
pub(super) fn status_named(name: &str) -> Result<TaskStatus, StoreError> {
    TaskStatus::from_wire(name).ok_or_else(|| {
        StoreError::Unavailable(format!("unknown task status {name:?} in the database"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_fit_up_to_i64_max_and_not_past_it() {
        let max = i64::MAX as u64;
        assert_eq!(integer(max, "revision"), Ok(i64::MAX));
        assert!(matches!(
            integer(max + 1, "revision"),
            Err(StoreError::Unavailable(why)) if why.contains("revision")
        ));
        assert_eq!(instant(max), i64::MAX);
        assert_eq!(instant(max + 1), i64::MAX);
        assert_eq!(instant(u64::MAX), i64::MAX);
    }

    #[test]
    fn every_status_reads_back_from_its_column_and_nothing_else_does() {
        for status in [
            TaskStatus::Working,
            TaskStatus::InputRequired,
            TaskStatus::Completed,
            TaskStatus::Failed,
            TaskStatus::Cancelled,
        ] {
            assert_eq!(status_named(status.as_str()), Ok(status));
        }
        assert!(status_named("Working").is_err());
        assert!(status_named("").is_err());
    }

    #[test]
    fn an_expiry_past_the_column_saturates() {
        let mut record = super::super::contract::record("t", "s", Some(u64::MAX));
        let c = Columns::of(&record).expect("columns");
        assert_eq!(c.expires_at, Some(i64::MAX));
        record.ttl_ms = None;
        assert_eq!(Columns::of(&record).expect("columns").expires_at, None);
        record.created_at = u64::MAX;
        assert!(Columns::of(&record).is_err());
    }
}
