//! Rate limiters (issue 2; being written).
