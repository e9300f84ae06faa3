//! `redis.register_function`'s arguments, read as Redis's function_lua.c reads them.

use super::flags::ScriptFlags;
use super::functions::{valid_name, BAD_NAME};
use super::state::{lua_bytes as string, Registered};
use mlua::{Function, Table, Value};

/// The function `args` register (named arguments in one table, or name and callback),
/// given those `so_far` in the library. The error is the text raised to the library.
pub fn register(args: &[Value], so_far: &[Registered]) -> Result<Registered, String> {
    let r = match args {
        [Value::Table(t)] => named(t)?,
        [_] => {
            return Err(
                "calling redis.register_function with a single argument is only \
                        applicable to Lua table (representing named arguments)."
                    .into(),
            )
        }
        [name, callback] => {
            let name =
                string(name).ok_or("first argument to redis.register_function must be a string")?;
            let Value::Function(callback) = callback else {
                return Err("second argument to redis.register_function must be a function".into());
            };
            Registered {
                name,
                description: None,
                flags: ScriptFlags::default(),
                callback: callback.clone(),
            }
        }
        _ => return Err("wrong number of arguments to redis.register_function".into()),
    };
    if !valid_name(&r.name) {
        return Err(BAD_NAME.into());
    }
    if so_far.iter().any(|f| f.name == r.name) {
        return Err("Function already exists in the library".into());
    }
    Ok(r)
}

fn named(t: &Table) -> Result<Registered, String> {
    let mut name = None;
    let mut description = None;
    let mut callback: Option<Function> = None;
    let mut flags = ScriptFlags::default();
    for pair in t.pairs::<Value, Value>() {
        let (k, v) = pair.map_err(|e| e.to_string())?;
        let key = string(&k)
            .ok_or("named argument key given to redis.register_function is not a string")?;
        let key = String::from_utf8_lossy(&key).to_ascii_lowercase();
        match key.as_str() {
            "function_name" => {
                name = Some(string(&v).ok_or(
                    "function_name argument given to redis.register_function must be a string",
                )?)
            }
            "description" => {
                description = Some(string(&v).ok_or(
                    "description argument given to redis.register_function must be a string",
                )?)
            }
            "callback" => match v {
                Value::Function(f) => callback = Some(f),
                _ => {
                    return Err(
                        "callback argument given to redis.register_function must be a function"
                            .into(),
                    )
                }
            },
            "flags" => {
                let Value::Table(list) = v else {
                    return Err("flags argument to redis.register_function must be a table \
                                representing function flags"
                        .into());
                };
                flags = read_flags(&list).ok_or("unknown flag given")?;
            }
            _ => return Err("unknown argument given to redis.register_function".into()),
        }
    }
    let name = name.ok_or("redis.register_function must get a function name argument")?;
    let callback = callback.ok_or("redis.register_function must get a callback argument")?;
    Ok(Registered {
        name,
        description,
        flags,
        callback,
    })
}

/// The flags array (names compared ignoring case); `None` for an unknown one.
fn read_flags(list: &Table) -> Option<ScriptFlags> {
    let mut flags = ScriptFlags::default();
    for i in 1.. {
        match list.raw_get::<Value>(i).ok()? {
            Value::Nil => break,
            v => {
                let name = string(&v)?.to_ascii_lowercase();
                if !flags.set(&name) {
                    return None;
                }
            }
        }
    }
    Some(flags)
}
