//! One flag vocabulary across commands (issue 21, item 3): the test walks every subcommand's
//! clap definition and checks that a concept has one long name everywhere, that a long name
//! means the same thing everywhere (value name, default, accepted values, short form), that
//! every flag and subcommand says what it does, and that every command that reads transcripts
//! or request logs detects their kind unless `--kind` names it.
//!
//! The checks caught, on the main branch before the fix: `report`, `sweep`, `account`,
//! `validate`, `explain`, `export` and `workload` took `--pricing` but not `--price` (while the
//! unknown-model hint suggests `--price`); `--pricing`/`--cache-config` as FILE in `run`,
//! PRICING/CACHE_CONFIG elsewhere; `--strategy` required in `export mooncake`/`export requests`;
//! account's list-valued `--ttl 5m,1h`/`--keepalive off,4m30s` beside run's one-value `--ttl`/
//! `--keepalive`, and `--strategies` beside `--strategy`; `import` requiring KIND and naming
//! `--kind` `log_kind`; three `--kind` flags with three value sets; `account` reading
//! transcripts with no `--kind`; `--model MODEL` and `--keepalive KEEPALIVE` in `workload`;
//! `--out OUT` in nine commands without saying file or directory; `-j`/`-q` in one command only.

use std::collections::BTreeMap;
use std::process::Command as Process;

use clap::{Arg, CommandFactory, Parser};
// The command line lives in the binary (the library exposes no clap types): its definition is
// compiled into this test as well.
#[allow(dead_code, unused_imports)]
#[path = "../src/cli/mod.rs"]
mod cli;
use cli::Cli;

/// One concept of the vocabulary: its long name in every subcommand and its earlier spellings.
struct Concept {
    /// What the flag is for, in words (named in failure messages).
    what: &'static str,
    /// The one long name of the concept, in every subcommand that has it.
    long: &'static str,
    /// The value name every subcommand shows (`None`: a switch; `out` is DIR or FILE).
    value_name: Option<&'static str>,
    /// The default every subcommand applies when the flag is absent (`None`: no clap default).
    default: Option<&'static str>,
    /// Earlier spellings, kept as hidden aliases so scripts keep working.
    aliases: &'static [&'static str],
}

const fn c(
    what: &'static str,
    long: &'static str,
    value_name: Option<&'static str>,
    default: Option<&'static str>,
    aliases: &'static [&'static str],
) -> Concept {
    Concept {
        what,
        long,
        value_name,
        default,
        aliases,
    }
}

/// Every flag that appears in more than one subcommand, and every renamed flag.
#[rustfmt::skip]
const VOCABULARY: &[Concept] = &[
    //  what                                long                 value name            default            aliases
    c("shard of the grid",                 "shard",              Some("SHARD"),        None,              &[]),
    c("shard index from the environment",  "shard-env",          Some("VAR/N"),        None,              &[]),
    c("price table file",                  "pricing",            Some("FILE"),         None,              &[]),
    c("price of a model the table lacks",  "price",              Some("SPEC"),         None,              &[]),
    c("cache-model parameters file",       "cache-config",       Some("FILE"),         None,              &[]),
    c("strategies replayed",               "strategy",           Some("STRATEGY"),     Some("all"),       &[]),
    c("cache models",                      "cache",              Some("CACHE"),        Some("anthropic"), &[]),
    c("input file kind",                   "kind",               Some("KIND"),         None,              &[]),
    c("where the output goes",             "out",                Some("DIR|FILE"),     None,              &[]),
    c("JSON on standard output",           "json",               None,                 Some("false"),     &[]),
    c("one line per result",               "quiet",              None,                 Some("false"),     &[]),
    c("model of every request",            "model",              Some("ID"),           None,              &[]),
    c("TTL class",                         "ttl",                Some("5m|1h"),        None,              &[]),
    c("keep-alive interval",               "keepalive",          Some("INTERVAL"),     None,              &[]),
    c("scenario field",                    "set",                Some("PATH=VALUE"),   None,              &[]),
    c("parameter axis",                    "parameter-list",     Some("NAME=V1,V2"),   None,              &["sweep"]),
    c("what-if strategies",                "what-if-strategy",   Some("STRATEGIES"),   Some("all"),       &["strategies"]),
    c("what-if TTL classes",               "what-if-ttl",        Some("TTLS"),         Some("5m,1h"),     &["ttl"]),
    c("what-if keep-alives",               "what-if-keepalive",  Some("INTERVALS"),    Some("off,4m30s"), &["keepalive"]),
    c("sweep file of the shards",          "sweep",              Some("SWEEP"),        None,              &[]),
    c("grid size cap",                     "max-points",         Some("N"),            Some("100000"),    &[]),
    c("keep over-context scenarios",       "allow-over-context", None,                 Some("false"),     &[]),
    c("where replayed events come from",   "events",             Some("EVENTS"),       Some("transcript"), &[]),
    c("leading shared block",              "shared-prefix",      Some("SHARED_PREFIX"), None,             &[]),
    c("output format",                     "format",             Some("FORMAT"),       None,              &[]),
    c("random seed",                       "seed",               Some("SEED"),         None,              &[]),
];

/// Earlier spellings that are another concept's long name elsewhere, kept in one subcommand
/// only so that its users' scripts keep working: (subcommand, alias).
const LEGACY_ALIASES: &[(&str, &str)] = &[
    ("account", "ttl"),
    ("account", "keepalive"),
    ("workload", "sweep"),
];

/// Where a flag departs from its concept's value name, default or accepted values, and why:
/// (subcommand, long name, what differs, reason). A default clap does not show is stated in the
/// flag's help (checked).
#[rustfmt::skip]
const DIFFERENCES: &[(&str, &str, &str, &str)] = &[
    ("account", "strategy", "default", "one strategy: the one the harness ran"),
    ("validate", "strategy", "default", "one strategy: the one the harness ran"),
    ("export mooncake", "strategy", "default", "one strategy renders one trace"),
    ("export requests", "strategy", "default", "one strategy renders one log"),
    ("sweep", "strategy", "default", "absent is told from -L strategy= (help: default all)"),
    ("compare", "cache", "default", "the baseline's cache models"),
    ("validate", "cache", "default", "openai for Codex rollouts"),
    ("sweep", "cache", "default", "absent is told from -L cache= (help: default anthropic)"),
    ("export requests", "cache", "default", "only anthropic-auto/-explicit marks can be exported"),
    ("workload", "cache", "default", "block-hash traces replay on an engine"),
    ("workload", "cache", "values", "repeatable as well as comma-separated"),
    ("import", "ttl", "values", "recorded sessions add auto (the bill's class) and version"),
    ("validate", "ttl", "values", "recorded sessions add auto (the bill's class) and version"),
    ("import", "ttl", "default", "auto: the class the bill shows"),
    ("import", "ttl", "value name", "auto, version, 5m or 1h"),
    ("validate", "ttl", "value name", "auto, version, 5m or 1h"),
    ("validate", "ttl", "default", "auto: the class the bill shows"),
    ("workload", "ttl", "values", "provider caches of traces take any duration"),
    ("workload", "ttl", "value name", "provider caches of traces take any duration"),
    ("workload", "keepalive", "values", "same syntax, read as a duration"),
    ("workload", "parameter-list", "values", "engine axes (kv-blocks ranges)"),
    ("validate", "shared-prefix", "values", "the recorded first read vs the account timeline"),
    ("validate", "shared-prefix", "default", "the recorded first read vs the account timeline"),
    ("account", "shared-prefix", "default", "the account timeline"),
    ("run", "format", "values", "each command's own output formats"),
    ("explain", "format", "values", "each command's own output formats"),
    ("explain", "format", "default", "each command's own output formats"),
    ("export requests", "format", "values", "each command's own output formats"),
    ("export requests", "format", "default", "each command's own output formats"),
    ("workload", "seed", "default", "arrivals are drawn from seed 0 unless told"),
    ("merge", "out", "default", "shards merge into sweep-out, as sweep writes"),
    ("report", "out", "default", "the report directory"),
];

/// Subcommands that read session transcripts, request logs or traces: each takes `--kind`,
/// absent by default (the kind is detected).
const KIND_READERS: &[&str] = &["validate", "account", "import", "explain", "workload"];

/// One flag of one subcommand.
struct Flag {
    /// The subcommand path, e.g. `export mooncake`.
    command: String,
    /// The clap definition.
    arg: Arg,
}

fn cli() -> clap::Command {
    let mut cmd = Cli::command();
    cmd.build();
    cmd
}

/// Every subcommand, recursively, with its path from the top (`""` is `plancache` itself).
fn commands() -> Vec<(String, clap::Command)> {
    fn walk(c: &clap::Command, path: &str, out: &mut Vec<(String, clap::Command)>) {
        out.push((path.to_string(), c.clone()));
        for s in c.get_subcommands() {
            let p = if path.is_empty() {
                s.get_name().to_string()
            } else {
                format!("{path} {}", s.get_name())
            };
            walk(s, &p, out);
        }
    }
    let mut out = Vec::new();
    walk(&cli(), "", &mut out);
    out
}

fn is_generated(a: &Arg) -> bool {
    matches!(a.get_id().as_str(), "help" | "version")
}

/// Every long flag of every subcommand; a global flag is counted once, at the top.
fn flags() -> Vec<Flag> {
    let mut out = Vec::new();
    for (path, c) in commands() {
        for a in c.get_arguments() {
            if a.get_long().is_none() || is_generated(a) || (a.is_global_set() && !path.is_empty())
            {
                continue;
            }
            out.push(Flag {
                command: path.clone(),
                arg: a.clone(),
            });
        }
    }
    out
}

fn long(a: &Arg) -> &str {
    a.get_long().unwrap_or_default()
}

fn value_name(a: &Arg) -> Option<String> {
    if !a.get_action().takes_values() {
        return None;
    }
    Some(
        a.get_value_names()
            .map(|v| {
                v.iter()
                    .map(|s| s.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_else(|| a.get_id().as_str().to_uppercase()),
    )
}

fn default(a: &Arg) -> Option<String> {
    let d: Vec<String> = a
        .get_default_values()
        .iter()
        .map(|v| v.to_string_lossy().into_owned())
        .collect();
    (!d.is_empty()).then(|| d.join(","))
}

fn possible_values(a: &Arg) -> Vec<String> {
    a.get_possible_values()
        .iter()
        .map(|p| p.get_name().to_string())
        .collect()
}

fn help(a: &Arg) -> String {
    a.get_long_help()
        .or_else(|| a.get_help())
        .map(|h| h.to_string())
        .unwrap_or_default()
}

fn concept(name: &str) -> Option<&'static Concept> {
    VOCABULARY.iter().find(|c| c.long == name)
}

fn differs(command: &str, flag: &str, what: &str) -> bool {
    DIFFERENCES
        .iter()
        .any(|(c, f, w, _)| *c == command && *f == flag && *w == what)
}

#[test]
fn every_flag_and_subcommand_says_what_it_does() {
    let mut missing = Vec::new();
    for (path, c) in commands() {
        if !path.is_empty() && c.get_about().is_none() {
            missing.push(format!("subcommand `{path}`"));
        }
        for a in c.get_arguments().filter(|a| !is_generated(a)) {
            if help(a).trim().is_empty() {
                missing.push(format!("`{path}` {}", a.get_id()));
            }
        }
    }
    assert!(missing.is_empty(), "no help text: {missing:?}");
}

#[test]
fn a_flag_in_several_commands_is_in_the_vocabulary_under_its_one_name() {
    let mut users: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in flags() {
        users
            .entry(long(&f.arg).to_string())
            .or_default()
            .push(f.command.clone());
    }
    let mut wrong = Vec::new();
    for (name, commands) in &users {
        if commands.len() > 1 && concept(name).is_none() {
            wrong.push(format!(
                "--{name} ({}) is in several commands but not in VOCABULARY",
                commands.join(", ")
            ));
        }
        // A long name that is a concept's earlier spelling: the flag should carry the concept's
        // name, with the old one as an alias.
        for c in VOCABULARY
            .iter()
            .filter(|c| c.aliases.contains(&name.as_str()))
        {
            if concept(name).is_none() {
                wrong.push(format!(
                    "--{name} ({}) is an earlier spelling of --{} ({}); name the flag --{} and keep --{name} as an alias",
                    commands.join(", "),
                    c.long,
                    c.what,
                    c.long
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn aliases_are_the_concepts_earlier_spellings_and_hidden() {
    let mut wrong = Vec::new();
    for f in flags() {
        let name = long(&f.arg);
        let aliases = f.arg.get_all_aliases().unwrap_or_default();
        let visible = f.arg.get_visible_aliases().unwrap_or_default();
        for alias in aliases {
            let listed = concept(name).is_some_and(|c| c.aliases.contains(&alias));
            if !listed {
                wrong.push(format!(
                    "`{}` --{name}: alias --{alias} is not listed for it in VOCABULARY",
                    f.command
                ));
            }
            if visible.contains(&alias) {
                wrong.push(format!(
                    "`{}` --{name}: alias --{alias} shows in --help; keep earlier spellings hidden",
                    f.command
                ));
            }
            let elsewhere = concept(alias).is_some();
            if elsewhere && !LEGACY_ALIASES.contains(&(f.command.as_str(), alias)) {
                wrong.push(format!(
                    "`{}` --{name}: alias --{alias} is another concept's name; list it in LEGACY_ALIASES or drop it",
                    f.command
                ));
            }
        }
    }
    // Every listed legacy alias is real (no stale entry).
    for (command, alias) in LEGACY_ALIASES {
        let present = flags().iter().any(|f| {
            f.command == *command && f.arg.get_all_aliases().unwrap_or_default().contains(alias)
        });
        if !present {
            wrong.push(format!(
                "LEGACY_ALIASES lists `{command}` --{alias}, which does not exist"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The shape of one flag that must agree across subcommands.
fn check_against_concept(f: &Flag, c: &Concept, wrong: &mut Vec<String>) {
    let a = &f.arg;
    let name = c.long;
    let cmd = f.command.as_str();
    let vn = value_name(a);
    let vn_ok = match (c.long, vn.as_deref()) {
        // `--out` says which it is, and its help agrees.
        ("out", Some("DIR")) => help(a).to_lowercase().contains("director"),
        ("out", Some("FILE")) => help(a).to_lowercase().contains("file"),
        ("out", Some("FILE|DIR")) => {
            let h = help(a).to_lowercase();
            h.contains("file") && h.contains("director")
        }
        ("out", _) => false,
        (_, v) => v == c.value_name || differs(cmd, name, "value name"),
    };
    if !vn_ok {
        wrong.push(format!(
            "`{cmd}` --{name}: value name {vn:?}, the vocabulary's is {:?} ({})",
            c.value_name, c.what
        ));
    }
    if c.default.is_some() && a.is_required_set() {
        wrong.push(format!(
            "`{cmd}` --{name} is required where other commands default it ({})",
            c.what
        ));
    }
    let d = default(a);
    if d.as_deref() != c.default && !differs(cmd, name, "default") {
        wrong.push(format!(
            "`{cmd}` --{name}: default {d:?}, elsewhere {:?} ({})",
            c.default, c.what
        ));
    }
    if differs(cmd, name, "default") && d.is_none() && !help(a).to_lowercase().contains("default") {
        wrong.push(format!(
            "`{cmd}` --{name}: its own default is listed in DIFFERENCES but its help does not state it"
        ));
    }
}

#[test]
fn a_long_name_means_the_same_in_every_command() {
    let all = flags();
    let mut wrong = Vec::new();
    for f in &all {
        if let Some(c) = concept(long(&f.arg)) {
            check_against_concept(f, c, &mut wrong);
        }
    }
    // Accepted values and the short form: the same in every subcommand that has the flag,
    // measured against the first one that keeps to the vocabulary.
    let mut groups: BTreeMap<&str, Vec<&Flag>> = BTreeMap::new();
    for f in &all {
        groups.entry(long(&f.arg)).or_default().push(f);
    }
    for (name, group) in groups {
        let base = group
            .iter()
            .find(|f| !differs(&f.command, name, "values"))
            .unwrap_or(&group[0]);
        for f in &group {
            let (a, b) = (&f.arg, &base.arg);
            if !differs(&f.command, name, "values")
                && (possible_values(a) != possible_values(b)
                    || a.get_value_parser().type_id() != b.get_value_parser().type_id()
                    || std::mem::discriminant(a.get_action())
                        != std::mem::discriminant(b.get_action()))
            {
                wrong.push(format!(
                    "--{name}: `{}` accepts {:?} ({:?}), `{}` {:?} ({:?})",
                    f.command,
                    possible_values(a),
                    a.get_value_parser().type_id(),
                    base.command,
                    possible_values(b),
                    b.get_value_parser().type_id()
                ));
            }
            if a.get_short() != b.get_short() {
                wrong.push(format!(
                    "--{name}: short -{:?} in `{}`, -{:?} in `{}`",
                    a.get_short(),
                    f.command,
                    b.get_short(),
                    base.command
                ));
            }
        }
    }
    // No stale DIFFERENCES: each names a flag that exists.
    for (cmd, name, what, why) in DIFFERENCES {
        if !all
            .iter()
            .any(|f| f.command == *cmd && long(&f.arg) == *name)
        {
            wrong.push(format!(
                "DIFFERENCES lists `{cmd}` --{name} ({what}: {why}), which does not exist"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_command_that_takes_a_pricing_file_takes_a_price() {
    let all = flags();
    let has = |cmd: &str, name: &str| all.iter().any(|f| f.command == cmd && long(&f.arg) == name);
    let missing: Vec<&str> = all
        .iter()
        .filter(|f| long(&f.arg) == "pricing" && !has(&f.command, "price"))
        .map(|f| f.command.as_str())
        .collect();
    assert!(
        missing.is_empty(),
        "--pricing without --price (the unknown-model hint names both): {missing:?}"
    );
    // The commands that price scenarios at all: every one of them (`check` too: its
    // unknown-model hint names both).
    for cmd in [
        "run", "check", "report", "compare", "sweep", "account", "validate", "workload",
    ] {
        assert!(has(cmd, "price"), "`{cmd}` has no --price");
    }
}

/// Whether a subcommand reads transcripts, request logs or traces: a positional named or
/// described so.
fn reads_transcripts(c: &clap::Command) -> bool {
    c.get_positionals().any(|p| {
        let text = format!("{} {}", value_name(p).unwrap_or_default(), help(p)).to_lowercase();
        text.contains("transcript") || text.contains("log") || text.contains("trace")
    })
}

#[test]
fn every_command_that_reads_transcripts_detects_their_kind() {
    let readers: Vec<(String, clap::Command)> = commands()
        .into_iter()
        .filter(|(p, c)| !p.is_empty() && reads_transcripts(c))
        .collect();
    let names: Vec<&str> = readers.iter().map(|(p, _)| p.as_str()).collect();
    for (path, c) in &readers {
        let kind = c
            .get_arguments()
            .find(|a| a.get_long() == Some("kind"))
            .unwrap_or_else(|| panic!("`{path}` reads transcripts or logs but has no --kind"));
        assert!(
            !kind.is_required_set(),
            "`{path}` --kind is required; detect the kind instead"
        );
        assert_eq!(
            default(kind),
            None,
            "`{path}` --kind: absent must mean detected"
        );
        let h = help(kind);
        assert!(
            h.contains("default: detected") || h.contains("default: told from"),
            "`{path}` --kind help does not say the kind is detected: {h}"
        );
        let values = possible_values(kind);
        for k in ["claude-code", "codex", "claude-trace", "har", "mooncake"] {
            assert!(
                values.contains(&k.to_string()),
                "`{path}` --kind lacks {k}: {values:?}"
            );
        }
        // A positional KIND (import) may be left out: the file alone is read, kind detected.
        for p in c.get_positionals() {
            let vn = value_name(p).unwrap_or_default();
            if vn.starts_with("KIND") && p.is_required_set() {
                assert_eq!(vn, "KIND|FILE", "`{path}` requires KIND; detect it instead");
            }
        }
    }
    // Not vacuous: each of these reads transcripts or logs and says so.
    for r in KIND_READERS {
        assert!(
            names.contains(r),
            "`{r}` reads transcripts or logs but its positional does not say so: {names:?}"
        );
    }
}

#[test]
fn old_spellings_still_parse_to_the_new_flags() {
    use cli::Command;
    let parse = |args: &[&str]| {
        Cli::try_parse_from(std::iter::once("plancache").chain(args.iter().copied()))
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
    };
    let old = parse(&[
        "account",
        "d",
        "--strategies",
        "none",
        "--ttl",
        "1h",
        "--keepalive",
        "off",
    ]);
    let new = parse(&[
        "account",
        "d",
        "--what-if-strategy",
        "none",
        "--what-if-ttl",
        "1h",
        "--what-if-keepalive",
        "off",
    ]);
    match (old.command, new.command) {
        (Command::Account(o), Command::Account(n)) => {
            assert_eq!(
                (o.strategies, o.ttl, o.keepalive),
                ("none".into(), "1h".into(), "off".into())
            );
            assert_eq!(
                (n.strategies, n.ttl, n.keepalive),
                ("none".into(), "1h".into(), "off".into())
            );
        }
        _ => panic!("not account"),
    }
    match parse(&[
        "workload",
        "t",
        "--sweep",
        "kv-blocks=4,8",
        "-L",
        "ttl=5m,1h",
    ])
    .command
    {
        Command::Workload(w) => assert_eq!(w.sweep, vec!["kv-blocks=4,8", "ttl=5m,1h"]),
        _ => panic!("not workload"),
    }
    // `report` takes --price (its unknown-model hint names it), and export has a strategy.
    parse(&["report", "--price", "input=2,output=8"]);
    match parse(&["export", "mooncake", "s.toml"]).command {
        Command::Export(_) => {}
        _ => panic!("not export"),
    }
}

fn plancache(args: &[&str]) -> std::process::Output {
    Process::new(env!("CARGO_BIN_EXE_plancache"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("run plancache")
}

const CODEX: &str = "tests/fixtures/transcripts/codex_rollout.jsonl";

#[test]
fn import_tells_a_codex_rollout_from_its_records() {
    let named = plancache(&["import", "codex", CODEX]);
    let detected = plancache(&["import", CODEX]);
    let flagged = plancache(&["import", CODEX, "--kind", "codex"]);
    assert_eq!(
        named.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&named.stderr)
    );
    // The same scenario whichever way the kind is given (2 requests in the rollout).
    assert_eq!(detected.status.code(), Some(0));
    assert_eq!(detected.stdout, named.stdout);
    assert_eq!(flagged.stdout, named.stdout);
    assert!(String::from_utf8_lossy(&detected.stderr).contains("1 streams, 2 requests"));
    // A KIND without its file is named as such (not read as a file called `codex`).
    let bare = plancache(&["import", "codex"]);
    assert_eq!(bare.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bare.stderr).contains("import codex: no file given"));
    // Named wrong: the error says what the records are and the command that reads them.
    let wrong = plancache(&["import", "claude-code", CODEX]);
    assert_eq!(wrong.status.code(), Some(2));
    let err = String::from_utf8_lossy(&wrong.stderr);
    assert!(
        err.contains("its records are a codex log's, not claude-code's")
            && err.contains(&format!("plancache import codex {CODEX}")),
        "{err}"
    );
}

#[test]
fn a_kind_a_command_does_not_read_is_refused_with_the_command_that_does() {
    let v = plancache(&["validate", CODEX, "--kind", "har"]);
    assert_eq!(v.status.code(), Some(2));
    let err = String::from_utf8_lossy(&v.stderr);
    assert!(
        err.contains("--kind har: validate reads session transcripts"),
        "{err}"
    );
    assert!(err.contains("plancache explain"), "{err}");
    let e = plancache(&["explain", CODEX, "--kind", "codex"]);
    assert_eq!(e.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&e.stderr)
        .contains("--kind codex: explain reads raw API request logs"));
    let w = plancache(&[
        "workload",
        "tests/fixtures/traces/kv-cache-tester/traces/trace_0001.json",
        "--kind",
        "har",
    ]);
    assert_eq!(w.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&w.stderr).contains("--kind har: unknown trace kind"));
}

#[test]
fn export_without_strategy_renders_permission_mode() {
    let a = plancache(&["export", "mooncake", "scenarios/auth-plan.toml"]);
    let b = plancache(&[
        "export",
        "mooncake",
        "scenarios/auth-plan.toml",
        "--strategy",
        "permission-mode",
    ]);
    assert_eq!(
        a.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&a.stderr)
    );
    assert!(!a.stdout.is_empty());
    assert_eq!(a.stdout, b.stdout);
}

#[test]
fn sweep_prices_an_unknown_model_with_price() {
    // Without --price the unknown model is refused (exit 2) with the hint naming --price; with
    // it, the point is priced: 1 point x 1 strategy, and the row names the model.
    let base = [
        "sweep",
        "scenarios/auth-plan.toml",
        "--strategy",
        "permission-mode",
        "--model",
        "acme-coder-1",
    ];
    let refused = plancache(&base);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--price input=USD,output=USD"));
    let mut priced: Vec<&str> = base.to_vec();
    priced.extend(["--price", "input=2,output=8"]);
    let out = plancache(&priced);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn check_prices_an_unknown_model_with_price() {
    // `check` refused an unknown model with a hint naming --price, which it did not take.
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/auth-plan.toml"),
    )
    .unwrap();
    let text: String = text
        .lines()
        .map(|l| {
            if l.starts_with("model = ") {
                "model = \"acme-1\"".to_string()
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let path = dir.path().join("acme.toml");
    std::fs::write(&path, text + "\n").unwrap();
    let p = path.to_str().unwrap();
    let refused = plancache(&["check", p]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--price input=USD,output=USD"));
    let priced = plancache(&["check", p, "--price", "input=2,output=8", "--quiet"]);
    assert_eq!(
        priced.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&priced.stderr)
    );
}
