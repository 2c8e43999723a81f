//! Files a user names (profiles, cluster files, configurations), read with a size cap: a
//! path such as `/dev/zero` or a multi-gigabyte file by mistake gets an error, not the
//! machine's memory.

use std::io::Read;
use std::path::Path;

/// The largest input file read: far above any profile or cluster file (a few kilobytes).
pub const MAX_INPUT: u64 = 16 << 20;

/// The text of the file at `path`, refused with a clear error past [`MAX_INPUT`] bytes or when
/// it is not UTF-8.
pub fn read_capped(path: &Path) -> Result<String, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    file.take(MAX_INPUT + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    if bytes.len() as u64 > MAX_INPUT {
        return Err(format!(
            "{}: larger than {} MiB, which no input file of the workbench is; is it the right file?",
            path.display(),
            MAX_INPUT >> 20
        ));
    }
    String::from_utf8(bytes).map_err(|_| format!("{}: not UTF-8 text", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_file_is_refused_and_a_small_one_read() {
        let e = read_capped(Path::new("/dev/zero")).unwrap_err();
        assert!(e.contains("larger than 16 MiB"), "{e}");
        let dir = std::env::temp_dir().join(format!("input-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let f = dir.join("a.toml");
        std::fs::write(&f, "x = 1\n").unwrap();
        assert_eq!(read_capped(&f).unwrap(), "x = 1\n");
        std::fs::write(&f, [0xff, 0xfe]).unwrap();
        assert!(read_capped(&f).unwrap_err().contains("not UTF-8"));
        assert!(read_capped(&dir.join("missing")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
