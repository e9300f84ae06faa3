//! A selector described as the rules that recreate it (Redis's ACLDescribeSelector and
//! ACLDescribeSelectorCommandRules): ACL LIST, ACL GETUSER, ACL SAVE and CONFIG REWRITE.

use super::selector::Selector;
use crate::cmd::table::{CommandDef, CommandTable, ACL_CATEGORIES};

/// Keys, channels, then command rules.
pub fn selector(table: &CommandTable, s: &Selector, out: &mut Vec<u8>) {
    if s.allkeys {
        out.extend_from_slice(b"~* ");
    } else {
        for p in &s.patterns {
            p.describe(out);
            out.push(b' ');
        }
    }
    if s.allchannels {
        out.extend_from_slice(b"&* ");
    } else {
        out.extend_from_slice(b"resetchannels ");
        for c in &s.channels {
            out.push(b'&');
            out.extend_from_slice(c);
            out.push(b' ');
        }
    }
    out.extend_from_slice(&command_rules(table, s));
}

/// The command rules: `+@all` or `-@all`, then the categories that fit best, then single
/// commands (and first arguments) for what differs still. Categories are tried as Redis
/// tries them; single commands come in name order (Redis's follow its command dict).
pub fn command_rules(table: &CommandTable, s: &Selector) -> Vec<u8> {
    let n = table.all.len();
    let mut rules = Vec::new();
    let mut fake = Selector::new(false, n, false);
    let additive = !s.future();
    let start: &[u8] = if additive { b"-@all" } else { b"+@all" };
    let _ = fake.apply(table, start);
    rules.extend_from_slice(start);
    rules.push(b' ');

    // What the categories chosen so far have not yet covered.
    let mut temp = s.clone();
    let mut applied = [false; ACL_CATEGORIES.len()];
    loop {
        let mut best = None;
        let (mut mindiff, mut maxsame) = (usize::MAX, 0);
        for (j, _) in ACL_CATEGORIES.iter().enumerate() {
            if applied[j] {
                continue;
            }
            let (on, off) = temp.count_category(table, 1 << j);
            let (diff, same) = if additive { (off, on) } else { (on, off) };
            if same > diff && (diff < mindiff || (diff == mindiff && same > maxsame)) {
                best = Some(j);
                mindiff = diff;
                maxsame = same;
            }
        }
        let Some(j) = best else { break };
        let (sign, inverse) = if additive { ("+@", "-@") } else { ("-@", "+@") };
        let op = format!("{sign}{}", ACL_CATEGORIES[j]);
        let _ = fake.apply(table, op.as_bytes());
        let _ = temp.apply(table, format!("{inverse}{}", ACL_CATEGORIES[j]).as_bytes());
        rules.extend_from_slice(op.as_bytes());
        rules.push(b' ');
        applied[j] = true;
    }
    for cmd in table.top_level() {
        single_command(s, &mut fake, cmd, &mut rules);
    }
    rules.pop();
    debug_assert!(
        fake.same_bits(s),
        "ACL description does not recreate the selector"
    );
    rules
}

/// ACLDescribeSelectorCommandRulesSingleCommands for one command and its subcommands.
fn single_command(s: &Selector, fake: &mut Selector, cmd: &CommandDef, rules: &mut Vec<u8>) {
    let userbit = s.bit(cmd.id);
    if userbit != fake.bit(cmd.id) {
        rules.push(if userbit { b'+' } else { b'-' });
        rules.extend_from_slice(cmd.fullname.as_bytes());
        rules.push(b' ');
        fake.change_perm(cmd, userbit);
    }
    for sub in cmd.sorted_subcommands() {
        single_command(s, fake, sub, rules);
    }
    if !userbit {
        for arg in s.firstargs(cmd.id) {
            rules.push(b'+');
            rules.extend_from_slice(cmd.fullname.as_bytes());
            rules.push(b'|');
            rules.extend_from_slice(arg);
            rules.push(b' ');
        }
    }
}
