//! The harness's plots: the engine's ([`engine::plot`]), with each protocol's series in the
//! colours its registry entry declares.

pub(crate) use engine::plot::{Panel, Series, XScale};
use plotters::style::RGBColor;
use std::path::Path;

/// Draws `panels` side by side into a PNG at `path`, every protocol's series in its colour
/// ([`protocol_colour`]).
pub(crate) fn draw_png(path: &Path, caption: &str, panels: &[Panel]) -> Result<(), String> {
    engine::plot::draw_png(path, caption, panels, &protocol_colour)
}

/// The fixed colour of a protocol as `harness compare` labels it (`ramcast`, `tram:breadth`,
/// `ridge:ring`, ...), as its registry entry declares it ([`crate::protocols::Entry::colours`]);
/// see [`engine::plot::label_colour`].
pub(crate) fn protocol_colour(label: &str) -> Option<RGBColor> {
    let fixed = crate::protocols::REGISTRY
        .iter()
        .flat_map(|e| e.colours.iter());
    engine::plot::label_colour(label, fixed, |name| {
        crate::protocols::entry(name).is_some_and(|e| !e.colours.is_empty())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols_keep_their_colours_and_drawn_ones_are_readable() {
        let readable = |c: RGBColor| u32::from(c.0) + u32::from(c.1) + u32::from(c.2) <= 600;
        let mut fixed = Vec::new();
        for e in crate::protocols::REGISTRY.iter() {
            for &(label, c) in e.colours {
                assert!(label.split(':').next() == Some(e.name), "{label}");
                assert_eq!(protocol_colour(label), Some(c), "{label}");
                fixed.push(c);
            }
            if e.colours.is_empty() {
                assert_eq!(protocol_colour(e.name), None, "{}", e.name);
                continue;
            }
            // The default variant, as `compare` labels it (`tram:base`, `ridge:ridge`), has a
            // fixed colour.
            if let Some(v) = e.variants() {
                let label = format!("{}:{}", e.name, v.default);
                assert!(fixed.contains(&protocol_colour(&label).unwrap()), "{label}");
            }
            for variant in ["1-2-3", "0-0", "4;5", "x"] {
                let label = format!("{}:{variant}", e.name);
                let c = protocol_colour(&label).expect("a variant of a coloured protocol");
                assert!(readable(c), "{label}: {c:?}");
            }
        }
        let mut distinct = fixed.clone();
        distinct.sort_by_key(|c| (c.0, c.1, c.2));
        distinct.dedup();
        assert_eq!(distinct.len(), fixed.len(), "one colour per label");
        assert_eq!(protocol_colour("latency, measured"), None);
    }
}
