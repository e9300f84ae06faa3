//! Start-up configuration: `skein-server [file] [--name value ...] [-]` turned into config
//! text as redis-server does, and the config text read line by line (includes, quoting,
//! Redis's fatal error report).

use super::table::{Kind, Special, DEPRECATED, MULTI_ARG};
use super::{lookup, value, Config};

/// A start-up failure, printed as Redis prints it, then exit code 1.
#[derive(Debug, PartialEq, Eq)]
pub enum LoadError {
    /// Printed to stderr as is (the "*** FATAL CONFIG FILE ERROR ***" block).
    Fatal(String),
    /// Logged as a warning (can't open a config file).
    Log(String),
}

/// Redis's fatal config error block; `at` is (line number, line) when known.
pub fn fatal(at: Option<(usize, &str)>, reason: &str) -> LoadError {
    let mut s = format!(
        "\n*** FATAL CONFIG FILE ERROR (Redis {}) ***\n",
        crate::REDIS_VERSION
    );
    if let Some((n, line)) = at {
        s.push_str(&format!(
            "Reading the configuration file, at line {n}\n>>> '{line}'\n"
        ));
    }
    s.push_str(reason);
    s.push('\n');
    LoadError::Fatal(s)
}

/// What the command line asks for.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Startup {
    /// The config file (first argument not starting with '-').
    pub file: Option<String>,
    /// `-` given: read config from standard input.
    pub stdin: bool,
    /// The `--name value` options as config lines.
    pub options: String,
}

/// Parse argv (without the program name) as redis-server's main() does.
pub fn parse_argv(args: &[String]) -> Startup {
    let mut st = Startup::default();
    let mut j = 0;
    if let Some(first) = args.first() {
        if !first.starts_with('-') {
            st.file = Some(first.clone());
            j = 1;
        }
    }
    let argc = args.len();
    let mut handled_last = true;
    while j < argc {
        let a = &args[j];
        if a == "-" && (j == 0 || j == argc - 1) {
            st.stdin = true;
        } else if handled_last && a.starts_with("--") {
            if !st.options.is_empty() {
                st.options.push('\n');
            }
            st.options.push_str(&a[2..]);
            st.options.push(' ');
            let words = resp::parse::split_args(a.as_bytes()).map_or(0, |w| w.len());
            if words == 1 {
                handled_last = false;
                let next_is_opt = j + 1 < argc && args[j + 1].starts_with("--");
                let is_save = a.eq_ignore_ascii_case("--save");
                if is_save && (next_is_opt || j == argc - 1) {
                    st.options.push_str("\"\"");
                    handled_last = next_is_opt;
                } else if a.eq_ignore_ascii_case("--sentinel") && next_is_opt {
                    handled_last = true;
                }
            } else {
                handled_last = true;
            }
        } else {
            st.options.push_str(&quote_arg(a));
            st.options.push(' ');
            handled_last = true;
        }
        j += 1;
    }
    st
}

/// Turn `skein-server [file] [--name value ...]` into (file, config text).
pub fn args_to_text(args: &[String]) -> (Option<String>, String) {
    let st = parse_argv(args);
    (st.file, st.options)
}

/// Quote an argument as Redis's sdscatrepr does.
pub fn quote_arg(a: &str) -> String {
    repr(a.as_bytes())
}

/// Redis's `sdscatrepr`: a double-quoted string with C escapes.
pub fn repr(a: &[u8]) -> String {
    let mut out = Vec::with_capacity(a.len() + 2);
    resp::fmt::cat_repr(&mut out, a);
    // cat_repr escapes every byte outside printable ASCII, so this is ASCII.
    String::from_utf8_lossy(&out).into_owned()
}

/// Reads config text into a [`Config`], as Redis's loadServerConfigFromString.
pub struct Loader<'a> {
    cfg: &'a Config,
    /// A `save` line was already seen (the first one replaces the defaults).
    save_loaded: bool,
    /// Redis's `reading_config_file` (an include ends it, as in Redis).
    reading: bool,
    depth: usize,
    /// Module options (`name.option value`) given: refused at the end, as Redis does
    /// without the module.
    module_configs: bool,
}

impl<'a> Loader<'a> {
    pub fn new(cfg: &'a Config) -> Self {
        Loader {
            cfg,
            save_loaded: false,
            reading: false,
            depth: 0,
            module_configs: false,
        }
    }

    /// Redis's loadServerConfig: the file (if any), stdin (if asked), then the options.
    pub fn load(
        &mut self,
        file: Option<&str>,
        stdin: bool,
        options: &str,
    ) -> Result<(), LoadError> {
        let mut text = String::new();
        if let Some(f) = file {
            text.push_str(&read_config_files(f)?);
        }
        if stdin {
            crate::log::warning("Reading config from stdin");
            use std::io::Read;
            let mut buf = Vec::new();
            let _ = std::io::stdin().read_to_end(&mut buf);
            text.push_str(&String::from_utf8_lossy(&buf));
        }
        text.push('\n');
        text.push_str(options);
        self.load_string(&text)?;
        if self.module_configs {
            return Err(LoadError::Log(
                "Module Configuration detected without loadmodule directive or no ApplyConfig call: aborting".into(),
            ));
        }
        Ok(())
    }

    /// Read config text; the first error stops with Redis's report.
    pub fn load_string(&mut self, text: &str) -> Result<(), LoadError> {
        self.reading = true;
        for (i, raw) in text.split('\n').enumerate() {
            let line = raw.trim_matches([' ', '\t', '\r', '\n']);
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            match self.line(line) {
                Ok(()) => {}
                Err(Failure::Reason(r)) => return Err(fatal(Some((i + 1, line)), &r)),
                Err(Failure::Load(e)) => return Err(e),
            }
        }
        let logfile = self.cfg.get("logfile");
        if !logfile.is_empty() {
            if let Err(e) = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&logfile)
            {
                return Err(fatal(
                    None,
                    &format!("Can't open the log file: {}", value::strerror(&e)),
                ));
            }
        }
        if self.cfg.get_bool("cluster-enabled") && !self.cfg.get("replicaof").is_empty() {
            return Err(fatal(
                None,
                "replicaof directive not allowed in cluster mode",
            ));
        }
        let hz = self.cfg.get_i64("hz");
        if !(1..=500).contains(&hz) {
            let _ = self.cfg.set("hz", &[hz.clamp(1, 500).to_string()]);
        }
        self.reading = false;
        self.cfg.refresh_hot();
        Ok(())
    }

    /// One non-blank line.
    fn line(&mut self, line: &str) -> Result<(), Failure> {
        let Some(argv) = resp::parse::split_args(line.as_bytes()) else {
            return Err("Unbalanced quotes in configuration line".into());
        };
        let mut argv: Vec<String> = argv
            .into_iter()
            .map(|a| String::from_utf8_lossy(&a).into_owned())
            .collect();
        if argv.is_empty() {
            return Ok(());
        }
        argv[0].make_ascii_lowercase();
        let argc = argv.len();
        if let Some(e) = lookup(&argv[0]) {
            let def = e.def();
            if !def.has(MULTI_ARG) && argc != 2 {
                return Err("wrong number of arguments".into());
            }
            let args: Vec<String> = if def.has(MULTI_ARG) && argc == 2 && !argv[1].is_empty() {
                resp::parse::split_args(argv[1].as_bytes())
                    .unwrap_or_default()
                    .into_iter()
                    .map(|a| String::from_utf8_lossy(&a).into_owned())
                    .collect()
            } else {
                argv[1..].to_vec()
            };
            if matches!(def.kind, Kind::Special(Special::Save)) {
                return Ok(self.save_line(&args)?);
            }
            return Ok(self.cfg.set(e.name, &args)?);
        }
        let name = argv[0].as_str();
        if DEPRECATED
            .iter()
            .any(|(n, lo, hi)| *n == name && (*lo..=*hi).contains(&argc))
        {
            return Ok(());
        }
        match name {
            "include" if argc == 2 => self.include(&argv[1]).map_err(Failure::Load),
            "rename-command" if argc == 3 => {
                Err("rename-command is not supported by Skein: commands keep their names".into())
            }
            "user" if argc >= 2 => {
                self.cfg.users.lock().push(line.to_string());
                Ok(())
            }
            "loadmodule" if argc >= 2 => {
                Err("loadmodule is not supported by Skein: it cannot load Redis modules".into())
            }
            _ if name.contains('.') => {
                if argc < 2 {
                    return Err("Module config specified without value".into());
                }
                self.module_configs = true;
                Ok(())
            }
            "sentinel" => {
                if argc != 1 {
                    return Err("sentinel directive while not in sentinel mode".into());
                }
                Ok(())
            }
            _ => Err("Bad directive or wrong number of arguments".into()),
        }
    }

    /// `save` while reading a file: the first line replaces the defaults, later ones add.
    fn save_line(&mut self, args: &[String]) -> Result<(), String> {
        let def = super::find_option("save").ok_or("no save option")?;
        let new = value::parse(def, args, "")?;
        let keep = if self.reading && self.save_loaded {
            let empty_reset = args.len() == 1 && args[0].is_empty();
            if empty_reset {
                String::new()
            } else {
                self.cfg.get("save")
            }
        } else {
            String::new()
        };
        self.save_loaded = true;
        let joined = match (keep.is_empty(), new.is_empty()) {
            (true, _) => new,
            (false, true) => keep,
            (false, false) => format!("{keep} {new}"),
        };
        let words: Vec<String> = if joined.is_empty() {
            vec![String::new()]
        } else {
            joined.split(' ').map(String::from).collect()
        };
        self.cfg.set("save", &words)
    }

    fn include(&mut self, path: &str) -> Result<(), LoadError> {
        if self.depth >= 64 {
            return Err(fatal(None, "Too many nested includes"));
        }
        let text = read_config_files(path)?;
        self.depth += 1;
        let r = self.load_string(&text);
        self.depth -= 1;
        r
    }
}

/// Why a line failed: a reason for the report at that line, or an include's own failure.
enum Failure {
    Reason(String),
    Load(LoadError),
}

impl From<String> for Failure {
    fn from(r: String) -> Failure {
        Failure::Reason(r)
    }
}

impl From<&str> for Failure {
    fn from(r: &str) -> Failure {
        Failure::Reason(r.to_string())
    }
}

/// Read a config file, or every file a wildcard pattern matches (none is fine), as Redis.
fn read_config_files(path: &str) -> Result<String, LoadError> {
    let open_err = |p: &str, e: std::io::Error| {
        LoadError::Log(format!(
            "Fatal error, can't open config file '{}': {}",
            p,
            value::strerror(&e)
        ))
    };
    if !path.contains(['*', '?', '[']) {
        let bytes = std::fs::read(path).map_err(|e| open_err(path, e))?;
        return Ok(String::from_utf8_lossy(&bytes).into_owned());
    }
    let mut out = String::new();
    for p in glob_files(path) {
        let bytes = std::fs::read(&p).map_err(|e| open_err(&p, e))?;
        out.push_str(&String::from_utf8_lossy(&bytes));
    }
    Ok(out)
}

/// Files matching a pattern whose wildcards are in the last path component, sorted.
fn glob_files(pattern: &str) -> Vec<String> {
    let (prefix, file_pat) = match pattern.rfind('/') {
        Some(i) => (&pattern[..=i], &pattern[i + 1..]),
        None => ("", pattern),
    };
    let dir = if prefix.is_empty() { "." } else { prefix };
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<String> = rd
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.') || file_pat.starts_with('.'))
        .filter(|n| engine::glob::glob_match(file_pat.as_bytes(), n.as_bytes(), false))
        .map(|n| format!("{prefix}{n}"))
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn argv_as_redis() {
        let st = parse_argv(&argv(&["--port", "7000", "--save", "--appendonly", "no"]));
        assert_eq!(st.options, "port \"7000\" \nsave \"\"\nappendonly \"no\" ");
        let st = parse_argv(&argv(&["/etc/r.conf", "--save", "", "-"]));
        assert_eq!(st.file.as_deref(), Some("/etc/r.conf"));
        assert!(st.stdin);
        assert_eq!(st.options, "save \"\" ");
        let st = parse_argv(&argv(&["--port 7000", "--save"]));
        assert_eq!(st.options, "port 7000 \nsave \"\"");
    }

    #[test]
    fn lines_and_errors() {
        let c = Config::default();
        let mut l = Loader::new(&c);
        l.load_string("save 900 1\nsave 300 10\nmaxmemory 1MB\n")
            .unwrap();
        assert_eq!(c.get("save"), "900 1 300 10");
        assert_eq!(c.get("maxmemory"), "1048576");
        let err = Loader::new(&c).load_string("\n\nbogus 1").unwrap_err();
        assert_eq!(
            err,
            LoadError::Fatal(
                "\n*** FATAL CONFIG FILE ERROR (Redis 7.0.15) ***\nReading the configuration file, at line 3\n>>> 'bogus 1'\nBad directive or wrong number of arguments\n".into()
            )
        );
        let err = Loader::new(&c).load_string("port \"1").unwrap_err();
        assert!(
            matches!(err, LoadError::Fatal(t) if t.contains("Unbalanced quotes in configuration line"))
        );
    }
}
