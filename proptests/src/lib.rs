//! Property-based exploration of fault schedules (issue 5). Not built yet.
