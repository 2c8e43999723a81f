//! The discussion sections of TRAM's figure summaries: why a published claim is or is not
//! reproduced, from the model.

/// Fig. 5.
pub(crate) const FIG5: &str = "";
/// Fig. 6.
pub(crate) const FIG6: &str = "";
/// Fig. 7.
pub(crate) const FIG7: &str = "";
/// Fig. 8.
pub(crate) const FIG8: &str = "";
/// Table 1.
pub(crate) const TABLE1: &str = "";
