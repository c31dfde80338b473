//! The app's settings files: one versioned record type per file in the data folder, each
//! read once and then served from memory, written atomically, with typed change events.
//!
//! Layout: `records` (the record of each file, its field names fixed as the file spells them).
//! Owns: [`Settings`] (get, set, watch, problems) and [`SettingsRecord`] (a file's name,
//! version and migration). A file that cannot be used is never lost: one that is not JSON
//! or not its record is kept aside as `<name>.unreadable`, one written by a newer app as
//! `<name>.v<N>`; the defaults are used and [`Settings::problems`] names the file.
//! Must not: save a wire type. The window's types convert to and from these records, so
//! renaming a field on the window's side cannot reset a saved setting.

pub mod records;

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};

/// The key of the version in every settings file.
const VERSION_KEY: &str = "version";

/// One settings file's record.
pub trait SettingsRecord: Serialize + DeserializeOwned + Default + Clone + Send + Sync + 'static {
    /// The file's name in the data folder.
    const FILE: &'static str;
    /// The version this app writes. A file without one predates versions: it has the shape
    /// of version 1.
    const VERSION: u32 = 1;
    /// The fields of a file written at `version` (1 ≤ `version` < [`Self::VERSION`]) in
    /// this version's shape, or why they cannot be.
    fn migrate(version: u32, fields: Value) -> Result<Value, String> {
        let _ = version;
        Ok(fields)
    }
}

/// Saving a settings file failed.
#[derive(Debug, thiserror::Error)]
#[error("saving {}: {reason}", path.display())]
pub struct SettingsError {
    pub path: PathBuf,
    pub reason: String,
}

/// A settings file the app could not use, and where it was kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsProblem {
    pub path: PathBuf,
    /// Where the file was moved to (`None`: it could not be read at all and stays).
    pub kept_as: Option<PathBuf>,
    pub reason: String,
}

/// Which record changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SettingsChange {
    pub file: &'static str,
    record: TypeId,
}

impl SettingsChange {
    /// True when the change is to record `T`.
    pub fn is<T: SettingsRecord>(&self) -> bool {
        self.record == TypeId::of::<T>()
    }
}

/// Hears every change of a record.
pub type Watcher = Box<dyn Fn(&SettingsChange) + Send + Sync>;

/// The settings of one data folder.
pub struct Settings {
    dir: PathBuf,
    cache: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
    problems: Mutex<Vec<SettingsProblem>>,
    watchers: Mutex<Vec<Watcher>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Settings {
    /// The settings kept in `dir` (nothing is read until a record is asked for).
    pub fn open(dir: &Path) -> Settings {
        Settings {
            dir: dir.to_path_buf(),
            cache: Mutex::new(HashMap::new()),
            problems: Mutex::new(Vec::new()),
            watchers: Mutex::new(Vec::new()),
        }
    }

    /// Record `T`: read from its file the first time, from memory after.
    pub fn get<T: SettingsRecord>(&self) -> T {
        let mut cache = lock(&self.cache);
        if let Some(value) = cache.get(&TypeId::of::<T>()).and_then(|v| v.downcast_ref::<T>()) {
            return value.clone();
        }
        let value = self.load::<T>();
        cache.insert(TypeId::of::<T>(), Arc::new(value.clone()));
        value
    }

    /// Saves `value` as record `T` (atomically, with its version), then tells the watchers.
    pub fn set<T: SettingsRecord>(&self, value: T) -> Result<(), SettingsError> {
        let path = self.dir.join(T::FILE);
        let fail = |reason: String| SettingsError { path: path.clone(), reason };
        let mut file = Map::new();
        file.insert(VERSION_KEY.into(), Value::from(T::VERSION));
        match serde_json::to_value(&value).map_err(|e| fail(e.to_string()))? {
            Value::Object(fields) => file.extend(fields),
            other => return Err(fail(format!("a settings record must be an object, not {other}"))),
        }
        let text = serde_json::to_vec_pretty(&Value::Object(file)).map_err(|e| fail(e.to_string()))?;
        k3_store::durable::write_atomic(&path, &text).map_err(|e| fail(e.to_string()))?;
        lock(&self.cache).insert(TypeId::of::<T>(), Arc::new(value));
        let change = SettingsChange { file: T::FILE, record: TypeId::of::<T>() };
        for watcher in lock(&self.watchers).iter() {
            watcher(&change);
        }
        Ok(())
    }

    /// Calls `watcher` after every change from now on.
    pub fn watch(&self, watcher: Watcher) {
        lock(&self.watchers).push(watcher);
    }

    /// The files that could not be used, as they were found.
    pub fn problems(&self) -> Vec<SettingsProblem> {
        lock(&self.problems).clone()
    }

    /// `T` from its file; the default when there is none, or when it cannot be used (then
    /// kept aside and named in the problems).
    fn load<T: SettingsRecord>(&self) -> T {
        let path = self.dir.join(T::FILE);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return T::default(),
            Err(e) => {
                self.problem(SettingsProblem { path, kept_as: None, reason: e.to_string() });
                return T::default();
            }
        };
        match parse::<T>(&bytes) {
            Ok(value) => value,
            Err(Refused::Unreadable(reason)) => self.set_aside::<T>(&path, "unreadable", reason),
            Err(Refused::Newer(version)) => {
                let reason =
                    format!("written by a newer k3-desktop (version {version}; this one reads up to {})", T::VERSION);
                self.set_aside::<T>(&path, &format!("v{version}"), reason)
            }
        }
    }

    fn set_aside<T: SettingsRecord>(&self, path: &Path, suffix: &str, reason: String) -> T {
        let aside = self.dir.join(format!("{}.{suffix}", T::FILE));
        let kept_as = std::fs::rename(path, &aside).ok().map(|()| aside);
        log::warn!("settings file {} not used: {reason}; kept as {kept_as:?}", path.display());
        self.problem(SettingsProblem { path: path.to_path_buf(), kept_as, reason });
        T::default()
    }

    fn problem(&self, problem: SettingsProblem) {
        lock(&self.problems).push(problem);
    }
}

/// Why a file's bytes are not a record.
enum Refused {
    Unreadable(String),
    Newer(u64),
}

/// The record in a file's bytes: its version read, migrated when older.
fn parse<T: SettingsRecord>(bytes: &[u8]) -> Result<T, Refused> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| Refused::Unreadable(format!("not JSON ({e})")))?;
    let Value::Object(mut fields) = value else {
        return Err(Refused::Unreadable("not a JSON object".into()));
    };
    let version = match fields.remove(VERSION_KEY) {
        None => 1,
        Some(v) => v.as_u64().ok_or_else(|| Refused::Unreadable(format!("`{VERSION_KEY}` is {v}, not a number")))?,
    };
    if version > u64::from(T::VERSION) {
        return Err(Refused::Newer(version));
    }
    let mut fields = Value::Object(fields);
    for from in version.max(1)..u64::from(T::VERSION) {
        fields = T::migrate(from as u32, fields).map_err(Refused::Unreadable)?;
    }
    serde_json::from_value(fields).map_err(|e| Refused::Unreadable(format!("not this app's settings ({e})")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    #[serde(default)]
    struct Colour {
        shade: String,
        #[serde(rename = "alphaPercent")]
        alpha: u32,
    }
    impl Default for Colour {
        fn default() -> Self {
            Colour { shade: "blue".into(), alpha: 100 }
        }
    }
    impl SettingsRecord for Colour {
        const FILE: &'static str = "colour.json";
        const VERSION: u32 = 2;
        fn migrate(version: u32, mut fields: Value) -> Result<Value, String> {
            // Version 1 spelled the shade `hue`.
            assert_eq!(version, 1);
            if let Some(hue) = fields.as_object_mut().and_then(|o| o.remove("hue")) {
                fields["shade"] = hue;
            }
            Ok(fields)
        }
    }

    #[test]
    fn a_record_is_read_once_saved_with_its_version_and_watched() {
        let dir = tempfile::tempdir().unwrap();
        let settings = Settings::open(dir.path());
        assert_eq!(settings.get::<Colour>(), Colour::default());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        settings.watch(Box::new(move |c| sink.lock().unwrap().push((c.file, c.is::<Colour>()))));
        settings.set(Colour { shade: "red".into(), alpha: 40 }).unwrap();
        assert_eq!(*seen.lock().unwrap(), vec![("colour.json", true)]);
        let text = std::fs::read_to_string(dir.path().join("colour.json")).unwrap();
        assert!(text.starts_with("{\n  \"version\": 2,"), "{text}");
        std::fs::write(dir.path().join("colour.json"), "{}").unwrap();
        assert_eq!(settings.get::<Colour>().shade, "red", "served from memory, not read per call");
        assert_eq!(Settings::open(dir.path()).get::<Colour>(), Colour::default());
    }

    #[test]
    fn an_older_file_migrates_and_one_without_a_version_is_version_one() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("colour.json"), r#"{"hue": "green", "alphaPercent": 50}"#).unwrap();
        let settings = Settings::open(dir.path());
        assert_eq!(settings.get::<Colour>(), Colour { shade: "green".into(), alpha: 50 });
        assert!(settings.problems().is_empty());
    }

    #[test]
    fn a_newer_or_broken_file_is_kept_aside_by_name_and_the_defaults_used() {
        let dir = tempfile::tempdir().unwrap();
        let newer = r#"{"version": 3, "shade": "teal"}"#;
        std::fs::write(dir.path().join("colour.json"), newer).unwrap();
        let settings = Settings::open(dir.path());
        assert_eq!(settings.get::<Colour>(), Colour::default());
        let problem = &settings.problems()[0];
        assert!(problem.reason.contains("newer") && problem.reason.contains("version 3"), "{problem:?}");
        assert_eq!(std::fs::read_to_string(dir.path().join("colour.json.v3")).unwrap(), newer);
        std::fs::write(dir.path().join("colour.json"), "{not json").unwrap();
        let settings = Settings::open(dir.path());
        assert_eq!(settings.get::<Colour>(), Colour::default());
        assert!(settings.problems()[0].reason.contains("not JSON"));
        assert_eq!(std::fs::read_to_string(dir.path().join("colour.json.unreadable")).unwrap(), "{not json");
    }
}
