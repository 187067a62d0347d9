//! The property search, one binary: `properties` (what it must not find in
//! the correct primitives) and `violations` (what it must find, shrunk, in
//! the broken ones and the documented non-guarantees).

mod properties;
mod violations;
