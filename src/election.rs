//! Leader election whose epoch is a fencing token (issue 2; being written).
