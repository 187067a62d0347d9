//! Redlock across N independent masters (issue 3; being written).
