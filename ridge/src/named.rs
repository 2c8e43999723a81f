//! Options chosen by name on the command line ([`crate::paxos::Dissemination`],
//! [`crate::config::Placement`]): each lists its values with their names once, and these two
//! lookups read that list both ways.

/// The name of `value` in `all`.
pub(crate) fn name_of<T: Copy + PartialEq>(all: &[(&'static str, T)], value: T) -> &'static str {
    all.iter()
        .find(|(_, v)| *v == value)
        .map(|(n, _)| *n)
        .expect("every value is listed")
}

/// The value named `name` in `all`, if any.
pub(crate) fn by_name<T: Copy>(all: &[(&'static str, T)], name: &str) -> Option<T> {
    all.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
}
