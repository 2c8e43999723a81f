//! Which `run` flags a protocol takes, and the refusal of the others: each protocol declares
//! what it takes ([`crate::protocols::Takes`]: shared flags by id, its own as the `clap::Args`
//! its folder defines), and a flag given on the command line that the chosen protocol does not
//! take is refused with the protocols that do take it and what it means. No list of what a
//! protocol refuses is kept anywhere.

use crate::protocols::{self, Takes, EVERY_RUN};
use clap::parser::ValueSource;
use clap::{ArgMatches, Command};

/// The ids of the flags given on the command line in `m` (not those left to their defaults).
pub(crate) fn given(m: &ArgMatches) -> Vec<String> {
    m.ids()
        .map(|id| id.as_str())
        .filter(|id| m.value_source(id) == Some(ValueSource::CommandLine))
        .map(String::from)
        .collect()
}

/// The ids of the flags `takes` covers, [`EVERY_RUN`] included.
fn ids(takes: &Takes) -> Vec<String> {
    let own = takes.own.map_or_else(Vec::new, |augment| {
        augment(Command::new("own"))
            .get_arguments()
            .map(|a| a.get_id().to_string())
            .collect()
    });
    EVERY_RUN
        .iter()
        .chain(takes.shared)
        .map(|id| id.to_string())
        .chain(own)
        .collect()
}

/// Refuses the first flag of `given` (clap ids, as [`given`] lists them) that `protocol` does
/// not take; `run` is the `run` command, for the flags' names and help.
pub(crate) fn refuse_foreign(
    protocol: &str,
    given: &[String],
    run: &Command,
) -> Result<(), String> {
    let Some(entry) = protocols::entry(protocol) else {
        return Ok(());
    };
    let takes = &entry.takes;
    let mine = ids(takes);
    let Some(flag) = given.iter().find(|id| !mine.contains(id)) else {
        return Ok(());
    };
    let arg = run.get_arguments().find(|a| a.get_id() == flag.as_str());
    let long = arg
        .and_then(|a| a.get_long())
        .map_or_else(|| flag.clone(), |l| format!("--{l}"));
    let meaning = arg
        .and_then(|a| a.get_help())
        .map(|h| h.to_string())
        .map(|h| {
            h.split(". ")
                .next()
                .unwrap_or_default()
                .trim_end_matches('.')
                .to_string()
        })
        .unwrap_or_default();
    let owners: Vec<&str> = protocols::REGISTRY
        .iter()
        .filter(|e| ids(&e.takes).contains(flag))
        .map(|e| e.name)
        .collect();
    let note = if takes.note.is_empty() {
        String::new()
    } else {
        format!("; {}", takes.note)
    };
    Err(format!(
        "{long} is not for --protocol {protocol}: it is {}'s ({meaning}){note}",
        owners.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    fn refusal(args: &[&str]) -> Result<(), String> {
        let cmd = crate::Cli::command();
        let m = cmd.clone().try_get_matches_from(args).unwrap();
        let (_, run) = m.subcommand().unwrap();
        let protocol: &String = run.get_one("protocol").unwrap();
        refuse_foreign(protocol, &given(run), cmd.find_subcommand("run").unwrap())
    }

    /// The command line is well formed: no two flags share an id or a name, every default
    /// parses (clap's own checks, which run only when asked).
    #[test]
    fn the_command_line_is_well_formed() {
        crate::Cli::command().debug_assert();
    }

    /// Every protocol takes its own flags and the shared ones it declares, and is refused the
    /// others with the protocols that take them, whether or not they have defaults.
    #[test]
    fn a_protocol_is_refused_the_flags_it_does_not_take() {
        for ok in [
            &[
                "harness",
                "run",
                "--protocol",
                "ridge",
                "--delta",
                "2ms",
                "--slots",
                "8",
            ][..],
            &[
                "harness",
                "run",
                "--protocol",
                "tram",
                "--tree",
                "depth",
                "--log-slots",
                "8",
            ],
            &[
                "harness",
                "run",
                "--protocol",
                "rdmc",
                "--nodes",
                "8",
                "--size",
                "1MB",
            ],
            &[
                "harness",
                "run",
                "--protocol",
                "heron",
                "--app",
                "kv",
                "--groups",
                "2",
            ],
            &[
                "harness",
                "run",
                "--seed",
                "3",
                "--runtime",
                "local",
                "--threads",
                "2",
            ],
        ] {
            assert_eq!(refusal(ok), Ok(()), "{ok:?}");
        }
        for (bad, says) in [
            (&["harness", "run", "--delta", "2ms"][..], "--delta is not for --protocol ramcast: it is ridge's (Ridge: an idle ensemble's coordinator proposes a null message after this long"),
            (&["harness", "run", "--protocol", "ridge", "--tree", "base"], "--tree is not for --protocol ridge: it is tram's"),
            (&["harness", "run", "--protocol", "rdmc", "--replicas", "3"], "--replicas is not for --protocol rdmc: it is ramcast, tram, ridge, heron's"),
            (&["harness", "run", "--protocol", "rdmc", "--log-slots", "64"], "it is tram's"),
            (&["harness", "run", "--protocol", "heron", "--size", "64"], "the application decides"),
            (&["harness", "run", "--protocol", "heron", "--posting", "each"], "--posting is not for --protocol heron"),
            (&["harness", "run", "--nodes", "8"], "it is rdmc's (RDMC group size, root included"),
            (&["harness", "run", "--protocol", "tram", "--dissemination", "ring"], "--dissemination is not for --protocol tram: it is ridge's"),
        ] {
            let err = refusal(bad).unwrap_err();
            assert!(err.contains(says), "{bad:?}: {err}");
        }
    }
}
