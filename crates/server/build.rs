//! Imports Redis 7.0.15's command definitions (`commands/*.json`, copied from Redis's
//! `src/commands/`) into one JSON document the server embeds: top-level commands by name,
//! each container's subcommands nested under `"subcommands"`. The server builds its command
//! table (arity, flags, ACL categories, key specs, docs) from it at start.

use serde_json::{Map, Value};
use std::{env, fs, path::Path};

fn main() {
    lua_libs();
    let dir = Path::new("commands");
    println!("cargo:rerun-if-changed=commands");
    let mut top: Map<String, Value> = Map::new();
    let mut subs: Vec<(String, String, Value)> = Vec::new();
    let mut files: Vec<_> = fs::read_dir(dir)
        .expect("commands dir")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    for path in files {
        let text = fs::read_to_string(&path).expect("read command json");
        let doc: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let obj = doc.as_object().expect("object");
        for (name, spec) in obj {
            let name = name.to_lowercase();
            match spec.get("container").and_then(Value::as_str) {
                Some(container) => subs.push((container.to_lowercase(), name, spec.clone())),
                None => {
                    top.insert(name, spec.clone());
                }
            }
        }
    }
    for (container, name, spec) in subs {
        let parent = top
            .get_mut(&container)
            .unwrap_or_else(|| panic!("container {container} missing"))
            .as_object_mut()
            .expect("object");
        let entry = parent
            .entry("subcommands")
            .or_insert_with(|| Value::Object(Map::new()));
        entry.as_object_mut().expect("object").insert(name, spec);
    }
    let out = Path::new(&env::var("OUT_DIR").expect("OUT_DIR")).join("commands.json");
    fs::write(
        out,
        serde_json::to_string(&Value::Object(top)).expect("json"),
    )
    .expect("write");
}

/// The C libraries Redis 7.0.15 gives Lua scripts (cjson, cmsgpack, bit, struct), from
/// Redis's deps/lua/src (see vendor/lua-libs/README.md), compiled against the headers of
/// the Lua that mlua vendors.
fn lua_libs() {
    println!("cargo:rerun-if-changed=vendor/lua-libs");
    let include = env::var("DEP_LUA_INCLUDE").expect("mlua-sys exports its Lua headers");
    let dir = Path::new("vendor/lua-libs");
    cc::Build::new()
        .include(include)
        .include(dir)
        .define("ENABLE_CJSON_GLOBAL", None)
        .warnings(false)
        .files(
            [
                "lua_cjson.c",
                "strbuf.c",
                "fpconv.c",
                "lua_cmsgpack.c",
                "lua_bit.c",
                "lua_struct.c",
            ]
            .map(|f| dir.join(f)),
        )
        .compile("redis_lua_libs");
}
