//! A checking run as one line of text: `seed=N key=value ... fault=F fault=F`, every parameter
//! the run is made of and its faults in the simulator's text form (`kill:3@1.5ms`, see
//! [`Fault`]). `check` prints a run this way and `check --replay LINE` runs exactly that run,
//! whatever later changes do to how seeds derive runs; a pinned failing seed is one such line.
//!
//! Values are what each type's `Display` writes and `FromStr` reads (times exactly, see
//! [`Nanos::exact`]), so a line reads back to the run it was written from; each protocol's
//! tests check that over hundreds of derived runs.

use std::fmt::Display;
use std::str::FromStr;
use transport::runtime::sim::Fault;
use transport::Nanos;

/// Writes a run's line, parameter by parameter.
#[derive(Debug)]
pub struct SpecWriter {
    line: String,
}

impl SpecWriter {
    /// A line starting with the run's seed.
    pub fn new(seed: u64) -> SpecWriter {
        SpecWriter {
            line: format!("seed={seed}"),
        }
    }

    /// Adds `key=value`.
    pub fn put(mut self, key: &str, value: impl Display) -> SpecWriter {
        let value = value.to_string();
        debug_assert!(
            !value.is_empty() && !value.contains(char::is_whitespace),
            "{key}=`{value}`"
        );
        self.line.push_str(&format!(" {key}={value}"));
        self
    }

    /// Adds a time, in its exact form.
    pub fn time(self, key: &str, t: Nanos) -> SpecWriter {
        self.put(key, t.exact())
    }

    /// Ends the line with the run's faults.
    pub fn faults(mut self, faults: &[Fault]) -> String {
        for f in faults {
            self.line.push_str(&format!(" fault={f}"));
        }
        self.line
    }
}

/// A run's line, read parameter by parameter: each is taken once, and whatever is left at the
/// end is refused, so a misspelt or foreign parameter is never ignored.
#[derive(Debug)]
pub struct Spec<'a> {
    words: Vec<(&'a str, &'a str)>,
    faults: Vec<&'a str>,
}

impl<'a> Spec<'a> {
    /// Splits `line` into its `key=value` words.
    pub fn parse(line: &'a str) -> Result<Spec<'a>, String> {
        let mut words = Vec::new();
        let mut faults = Vec::new();
        for word in line.split_whitespace() {
            match word.split_once('=') {
                Some(("fault", f)) => faults.push(f),
                Some((k, _)) if words.iter().any(|&(w, _)| w == k) => {
                    return Err(format!("`{k}=` is given twice"))
                }
                Some((k, v)) if !k.is_empty() && !v.is_empty() => words.push((k, v)),
                _ => return Err(format!("`{word}` is not a `key=value` parameter")),
            }
        }
        Ok(Spec { words, faults })
    }

    /// Takes parameter `key`, read as a `T`.
    pub fn get<T: FromStr>(&mut self, key: &str) -> Result<T, String>
    where
        T::Err: Display,
    {
        let i = self
            .words
            .iter()
            .position(|&(k, _)| k == key)
            .ok_or_else(|| format!("the run has no `{key}=`"))?;
        let (_, value) = self.words.remove(i);
        value.parse().map_err(|e| format!("`{key}={value}`: {e}"))
    }

    /// Takes the run's faults, in the order given.
    pub fn faults(&mut self) -> Result<Vec<Fault>, String> {
        std::mem::take(&mut self.faults)
            .into_iter()
            .map(str::parse)
            .collect()
    }

    /// Refuses the parameters nobody took.
    pub fn end(self, protocol: &str) -> Result<(), String> {
        match self.words.first() {
            None => Ok(()),
            Some((k, _)) => Err(format!(
                "`{k}=` is not a parameter of a {protocol} checking run"
            )),
        }
    }
}

/// `Vec<T>` as `a,b,c`.
pub fn list<T: Display>(xs: &[T]) -> String {
    let xs: Vec<String> = xs.iter().map(T::to_string).collect();
    xs.join(",")
}

/// Reads [`list`]'s form.
pub fn parse_list<T: FromStr>(s: &str) -> Result<Vec<T>, String>
where
    T::Err: Display,
{
    s.split(',')
        .map(|x| x.parse().map_err(|e| format!("`{x}`: {e}")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_reads_back_and_refuses_what_it_does_not_know() {
        let faults: Vec<Fault> = vec!["kill:3@1.5ms".parse().unwrap()];
        let line = SpecWriter::new(7)
            .put("groups", 2)
            .time("phase", Nanos(2_000_123))
            .faults(&faults);
        assert_eq!(line, "seed=7 groups=2 phase=2.000123ms fault=kill:3@1.5ms");
        let mut s = Spec::parse(&line).unwrap();
        assert_eq!(s.get::<u64>("seed"), Ok(7));
        assert_eq!(s.get::<usize>("groups"), Ok(2));
        assert_eq!(s.get::<Nanos>("phase"), Ok(Nanos(2_000_123)));
        assert_eq!(s.faults(), Ok(faults));
        assert_eq!(s.end("ramcast"), Ok(()));

        let mut s = Spec::parse("seed=1 grops=2").unwrap();
        assert_eq!(s.get::<u64>("seed"), Ok(1));
        assert!(s
            .get::<usize>("groups")
            .unwrap_err()
            .contains("no `groups=`"));
        let err = s.end("ramcast").unwrap_err();
        assert!(err.contains("`grops=` is not a parameter"), "{err}");
        assert!(Spec::parse("seed=1 seed=2").unwrap_err().contains("twice"));
        assert!(Spec::parse("seed").unwrap_err().contains("key=value"));
        let mut s = Spec::parse("groups=x").unwrap();
        assert!(s.get::<usize>("groups").unwrap_err().contains("`groups=x`"));
        assert_eq!(parse_list::<usize>(&list(&[1, 20, 3])), Ok(vec![1, 20, 3]));
    }
}
