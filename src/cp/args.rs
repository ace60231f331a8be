//! `ioprobe cp`'s flags (clap derive) and their mapping to [`Options`](super::Options),
//! applied in the order given as GNU's getopt loop does.

use clap::Args;

/// `--reflink` and `--sparse` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WhenArg {
    Auto,
    Always,
    Never,
}

impl WhenArg {
    pub fn when(self) -> crate::cp::data::When {
        match self {
            WhenArg::Auto => crate::cp::data::When::Auto,
            WhenArg::Always => crate::cp::data::When::Always,
            WhenArg::Never => crate::cp::data::When::Never,
        }
    }
}

/// `ioprobe cp`'s flags: GNU cp 9.1's names and meanings (docs/cp.md lists the few
/// deliberate differences). As with GNU's getopt, an option may be repeated (the last
/// of -i/-n, of -L/-H/-P, wins), a long option may be abbreviated, and a usage error
/// exits 1.
#[derive(Debug, Args)]
pub struct CpArgs {
    /// Same as -dR --preserve=all.
    #[arg(short = 'a', long)]
    pub archive: bool,
    /// Do not copy the file data, only the attributes.
    #[arg(long)]
    pub attributes_only: bool,
    /// Make a backup of each existing destination file: CONTROL is none/off,
    /// numbered/t, existing/nil or simple/never (default: $VERSION_CONTROL, else
    /// existing).
    #[arg(long, value_name = "CONTROL", num_args = 0..=1, require_equals = true,
          default_missing_value = "")]
    pub backup: Option<String>,
    /// Like --backup, but takes no argument.
    #[arg(short = 'b')]
    pub backup_default: bool,
    /// Copy the contents of special files (FIFOs, devices) when recursive.
    #[arg(long)]
    pub copy_contents: bool,
    /// Same as --no-dereference --preserve=links.
    #[arg(short = 'd')]
    pub no_deref_links: bool,
    /// If an existing destination file cannot be opened, remove it and try again.
    #[arg(short = 'f', long)]
    pub force: bool,
    /// Prompt before overwriting (overrides an earlier -n).
    #[arg(short = 'i', long, overrides_with = "no_clobber")]
    pub interactive: bool,
    /// Follow symbolic links given on the command line.
    #[arg(short = 'H', overrides_with_all = ["dereference", "no_dereference"])]
    pub deref_command_line: bool,
    /// Hard-link files instead of copying.
    #[arg(short = 'l', long)]
    pub link: bool,
    /// Always follow symbolic links in SOURCE.
    #[arg(short = 'L', long, overrides_with_all = ["deref_command_line", "no_dereference"])]
    pub dereference: bool,
    /// Do not overwrite an existing file (overrides an earlier -i).
    #[arg(short = 'n', long, overrides_with = "interactive")]
    pub no_clobber: bool,
    /// Never follow symbolic links in SOURCE.
    #[arg(short = 'P', long, overrides_with_all = ["deref_command_line", "dereference"])]
    pub no_dereference: bool,
    /// Same as --preserve=mode,ownership,timestamps.
    #[arg(short = 'p')]
    pub preserve_default: bool,
    /// Keep these attributes: mode, ownership, timestamps, links, context, xattr, all
    /// (without LIST: mode,ownership,timestamps).
    #[arg(long, value_name = "LIST", num_args = 0..=1, require_equals = true,
          default_missing_value = "mode,ownership,timestamps", action = clap::ArgAction::Append)]
    pub preserve: Vec<String>,
    /// Do not keep these attributes.
    #[arg(long, value_name = "LIST", action = clap::ArgAction::Append)]
    pub no_preserve: Vec<String>,
    /// Use the full source file name under DIRECTORY.
    #[arg(long)]
    pub parents: bool,
    /// Copy directories recursively.
    #[arg(short = 'r', short_alias = 'R', long = "recursive")]
    pub recursive: bool,
    /// FICLONE: auto (try it, then copy), always (fail where it cannot; the default
    /// without WHEN), never.
    #[arg(long, value_name = "WHEN", num_args = 0..=1, require_equals = true,
          default_missing_value = "always")]
    pub reflink: Option<WhenArg>,
    /// Remove each existing destination file before opening it (contrast --force).
    #[arg(long)]
    pub remove_destination: bool,
    /// Holes: auto (keep the source's), always (also make holes of runs of zeros),
    /// never.
    #[arg(long, value_name = "WHEN")]
    pub sparse: Option<WhenArg>,
    /// Remove trailing slashes from each SOURCE.
    #[arg(long)]
    pub strip_trailing_slashes: bool,
    /// Make symbolic links instead of copying.
    #[arg(short = 's', long)]
    pub symbolic_link: bool,
    /// The backup suffix (default: $SIMPLE_BACKUP_SUFFIX, else ~); implies a backup.
    #[arg(short = 'S', long, value_name = "SUFFIX")]
    pub suffix: Option<std::ffi::OsString>,
    /// Copy all SOURCE arguments into DIRECTORY.
    #[arg(short = 't', long, value_name = "DIRECTORY")]
    pub target_directory: Option<std::ffi::OsString>,
    /// Treat DEST as a normal file.
    #[arg(short = 'T', long)]
    pub no_target_directory: bool,
    /// Copy only when SOURCE is newer than the destination or it is missing.
    #[arg(short = 'u', long)]
    pub update: bool,
    /// Stay on this file system.
    #[arg(short = 'x', long)]
    pub one_file_system: bool,
    /// Files copied at once (default: the number of CPUs).
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
    /// One line per file: the method used and why (copy offload, reflink, sparse), and
    /// where the buffer and pipe sizes came from.
    #[arg(long)]
    pub debug: bool,
    /// The sources, then the destination (with -t, only sources). `-` is a file name,
    /// as in GNU cp: read standard input with /dev/stdin.
    #[arg(value_name = "SOURCE… DEST")]
    pub paths: Vec<std::ffi::OsString>,
}

impl CpArgs {
    /// The clap-free options; Err: a usage error (GNU's wording, exit status 1).
    /// `matches` (cp's own) give the order of the attribute and symlink options: as in
    /// GNU cp, a later one overrides an earlier (`--no-preserve=mode --preserve=all`
    /// keeps the mode, `-aL` follows symlinks, `-La` does not). Without them the order
    /// is -a, -d, -p, --preserve, --no-preserve, then -L/-H/-P.
    pub fn options(
        &self,
        verbose: bool,
        matches: Option<&clap::ArgMatches>,
    ) -> Result<crate::cp::Options, String> {
        use crate::cp::{Deref, Interactive, LinkMode, Options};
        let (p, deref) = self.attributes_in_order(matches)?;
        let recursive = self.recursive || self.archive;
        let link = match (self.link, self.symbolic_link) {
            (true, true) => return Err("cannot make both hard and symbolic links".into()),
            (true, false) => LinkMode::Hard,
            (false, true) => LinkMode::Symbolic,
            (false, false) => LinkMode::Copy,
        };
        let interactive = if self.no_clobber {
            Interactive::Never
        } else if self.interactive {
            Interactive::Ask
        } else {
            Interactive::Overwrite
        };
        let make_backups = self.backup.is_some() || self.backup_default || self.suffix.is_some();
        if make_backups && interactive == Interactive::Never {
            return Err("options --backup and --no-clobber are mutually exclusive".into());
        }
        let backup = self.backup_mode(make_backups)?;
        let suffix = self
            .suffix
            .clone()
            .or_else(|| std::env::var_os("SIMPLE_BACKUP_SUFFIX").filter(|s| !s.is_empty()))
            .filter(|s| !s.as_encoded_bytes().contains(&b'/'))
            .unwrap_or_else(|| "~".into());
        let reflink = self.reflink.unwrap_or(WhenArg::Auto);
        let sparse = self.sparse.unwrap_or(WhenArg::Auto);
        if reflink == WhenArg::Always && sparse != WhenArg::Auto {
            return Err("--reflink can be used only with --sparse=auto".into());
        }
        if p.context {
            return Err(
                "cannot preserve security context without an SELinux-enabled kernel".into(),
            );
        }
        Ok(Options {
            operands: self.paths.clone(),
            target_directory: self.target_directory.clone(),
            no_target_directory: self.no_target_directory,
            recursive,
            deref: deref.unwrap_or(if recursive && link != LinkMode::Hard {
                Deref::Never
            } else {
                Deref::Always
            }),
            preserve: p,
            interactive,
            // -n wins over --update, as in GNU cp.
            update: self.update && interactive != Interactive::Never,
            force: self.force,
            remove_destination: self.remove_destination,
            backup,
            suffix,
            link,
            parents: self.parents,
            one_file_system: self.one_file_system,
            attributes_only: self.attributes_only,
            copy_as_regular: !recursive || self.copy_contents,
            open_dangling_dest_symlink: std::env::var_os("POSIXLY_CORRECT").is_some(),
            strip_trailing_slashes: self.strip_trailing_slashes,
            verbose,
            debug: self.debug,
            reflink: reflink.when(),
            sparse: sparse.when(),
            jobs: self
                .jobs
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get())),
        })
    }

    /// The attributes to preserve and the symlink rule, from -a, -d, -p, --preserve,
    /// --no-preserve and -L/-H/-P applied in the order given (`matches`), as GNU's
    /// getopt loop applies them.
    fn attributes_in_order(
        &self,
        matches: Option<&clap::ArgMatches>,
    ) -> Result<(crate::cp::Preserve, Option<crate::cp::Deref>), String> {
        let mut events = self.attribute_events(matches);
        events.sort_by_key(|e| e.0);
        apply_attribute_events(events)
    }

    /// Each attribute and symlink option given, with its position on the command line.
    fn attribute_events(&self, matches: Option<&clap::ArgMatches>) -> Vec<(usize, Ev<'_>)> {
        use crate::cp::Deref;
        let flags = [
            ("archive", self.archive, Ev::Archive),
            ("no_deref_links", self.no_deref_links, Ev::NoDerefLinks),
            (
                "preserve_default",
                self.preserve_default,
                Ev::PreserveDefault,
            ),
            ("dereference", self.dereference, Ev::Deref(Deref::Always)),
            (
                "deref_command_line",
                self.deref_command_line,
                Ev::Deref(Deref::CommandLine),
            ),
            (
                "no_dereference",
                self.no_dereference,
                Ev::Deref(Deref::Never),
            ),
        ];
        let mut events: Vec<(usize, Ev)> = Vec::new();
        let index =
            |id: &str, fallback: usize| matches.and_then(|m| m.index_of(id)).unwrap_or(fallback);
        for (i, (id, set, ev)) in flags.into_iter().enumerate() {
            if set {
                events.push((index(id, i), ev));
            }
        }
        let listed = |id: &str, n: usize, base: usize| -> Vec<usize> {
            let got: Vec<usize> = matches
                .and_then(|m| m.indices_of(id))
                .map(|i| i.collect())
                .unwrap_or_default();
            (0..n)
                .map(|k| got.get(k).copied().unwrap_or(base + k))
                .collect()
        };
        for (k, i) in listed("preserve", self.preserve.len(), 100)
            .into_iter()
            .enumerate()
        {
            events.push((i, Ev::Preserve(&self.preserve[k])));
        }
        for (k, i) in listed("no_preserve", self.no_preserve.len(), 1000)
            .into_iter()
            .enumerate()
        {
            events.push((i, Ev::NoPreserve(&self.no_preserve[k])));
        }
        // Without matches, -L/-H/-P come last, as before.
        if matches.is_none() {
            for e in &mut events {
                if matches!(e.1, Ev::Deref(_)) {
                    e.0 += 10_000;
                }
            }
        }
        events
    }

    /// The backup control (--backup's value, else VERSION_CONTROL), when backups are
    /// made at all.
    fn backup_mode(&self, make_backups: bool) -> Result<crate::cp::Backup, String> {
        use crate::cp::Backup;
        if !make_backups {
            return Ok(Backup::None);
        }
        let control = match self.backup.as_deref() {
            Some(c) if !c.is_empty() => Some(c.to_string()),
            _ => std::env::var("VERSION_CONTROL")
                .ok()
                .filter(|v| !v.is_empty()),
        };
        match control {
            None => Ok(Backup::Existing),
            Some(c) => Backup::parse(&c),
        }
    }
}
/// One attribute or symlink option, as given on the command line.
enum Ev<'a> {
    Archive,
    NoDerefLinks,
    PreserveDefault,
    Preserve(&'a str),
    NoPreserve(&'a str),
    Deref(crate::cp::Deref),
}

/// The options in command-line order, each overriding what came before: the
/// attributes kept and the symlink rule.
fn apply_attribute_events(
    events: Vec<(usize, Ev)>,
) -> Result<(crate::cp::Preserve, Option<crate::cp::Deref>), String> {
    use crate::cp::{Deref, Preserve};
    let mut p = Preserve::default();
    let mut deref = None;
    for (_, ev) in events {
        match ev {
            Ev::Archive => {
                p.add(&Preserve::all());
                deref = Some(Deref::Never);
            }
            Ev::NoDerefLinks => {
                p.links = true;
                deref = Some(Deref::Never);
            }
            Ev::PreserveDefault => {
                p.mode = true;
                p.ownership = true;
                p.timestamps = true;
            }
            Ev::Preserve(l) => p.add(&crate::cp::parse_preserve(l)?),
            Ev::NoPreserve(l) => p.remove(&crate::cp::parse_preserve(l)?),
            Ev::Deref(d) => deref = Some(d),
        }
    }
    Ok((p, deref))
}
