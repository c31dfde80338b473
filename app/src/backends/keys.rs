//! [`KeyVault`]: where remote backends' API keys are kept — the OS keyring when one
//! answers (on Linux the Secret Service: GNOME Keyring, KWallet), else a file in the app's
//! data folder that only the user can read.
//!
//! Owns: saving, loading and deleting a backend's key, and saying where it went
//! ([`KeyPlace`]). The fallback file is made with mode 0600 from its first byte (a temp
//! file created so, then renamed into place) in a 0700 folder.
//! Must not: put a key in `backends.json`, the history, an export, a log line or an error.

use std::fs::OpenOptions;
use std::io::Write;
#[cfg(unix)]
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use keyring_core::{CredentialStore, Entry};

use crate::error::{AppError, ErrorKind};

/// The keyring service name entries are filed under.
const SERVICE: &str = "k3-desktop remote backend";
/// The folder of fallback key files inside the data folder.
pub const KEYS_FOLDER: &str = "backend-keys";

/// Where a backend's key is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyPlace {
    /// The OS keyring (Secret Service on Linux).
    SystemKeyring,
    /// `backend-keys/<id>.key` in the data folder, readable only by the user.
    UserFile,
}

/// Saves and finds keys.
pub struct KeyVault {
    folder: PathBuf,
    keyring: Option<Arc<CredentialStore>>,
}

impl KeyVault {
    /// Keys in the OS keyring when `use_keyring` and one can be reached, else in
    /// `data_dir/backend-keys/`.
    pub fn open(data_dir: &Path, use_keyring: bool) -> KeyVault {
        let keyring = if use_keyring { system_keyring() } else { None };
        KeyVault { folder: data_dir.join(KEYS_FOLDER), keyring }
    }

    /// Saves `key` for backend `id`, in the keyring if it takes it, else in a user-only file.
    pub fn save(&self, id: &str, key: &str) -> Result<KeyPlace, AppError> {
        if let Some(entry) = self.entry(id) {
            match entry.set_password(key) {
                Ok(()) => {
                    self.remove_file(id)?;
                    return Ok(KeyPlace::SystemKeyring);
                }
                Err(e) => {
                    log::warn!("the system keyring did not take backend {id}'s key ({e}); using a user-only file")
                }
            }
        }
        self.write_file(id, key)?;
        Ok(KeyPlace::UserFile)
    }

    /// The key saved for backend `id` at `place`.
    pub fn load(&self, id: &str, place: KeyPlace) -> Result<String, AppError> {
        match place {
            KeyPlace::SystemKeyring => {
                let entry = self.entry(id).ok_or_else(|| missing(id, "the system keyring cannot be reached"))?;
                entry.get_password().map_err(|e| missing(id, &format!("the system keyring: {e}")))
            }
            KeyPlace::UserFile => {
                let path = self.file(id);
                let text =
                    std::fs::read_to_string(&path).map_err(|e| missing(id, &format!("{}: {e}", path.display())))?;
                Ok(text.trim_end_matches('\n').to_string())
            }
        }
    }

    /// Deletes backend `id`'s key wherever it is.
    pub fn delete(&self, id: &str) -> Result<(), AppError> {
        if let Some(entry) = self.entry(id) {
            match entry.delete_credential() {
                Ok(()) | Err(keyring_core::Error::NoEntry) => {}
                Err(e) => log::warn!("deleting backend {id}'s key from the system keyring: {e}"),
            }
        }
        self.remove_file(id)
    }

    fn entry(&self, id: &str) -> Option<Entry> {
        let store = self.keyring.as_ref()?;
        Entry::new_in_store(store, SERVICE, id).ok()
    }

    /// `backend-keys/<id>.key` (ids are made of `[a-z0-9-]`, see `registry::new_id`).
    fn file(&self, id: &str) -> PathBuf {
        self.folder.join(format!("{id}.key"))
    }

    fn write_file(&self, id: &str, key: &str) -> Result<(), AppError> {
        let io = |what: &Path, e: std::io::Error| {
            AppError::new(ErrorKind::Io, format!("saving the key in {}: {e}", what.display()))
        };
        let mut folder = std::fs::DirBuilder::new();
        folder.recursive(true);
        #[cfg(unix)]
        folder.mode(0o700);
        folder.create(&self.folder).map_err(|e| io(&self.folder, e))?;
        let (path, tmp) = (self.file(id), self.folder.join(format!("{id}.key.tmp")));
        let _ = std::fs::remove_file(&tmp);
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        options.mode(0o600);
        let mut file = options.open(&tmp).map_err(|e| io(&tmp, e))?;
        file.write_all(key.as_bytes()).and_then(|()| file.sync_all()).map_err(|e| io(&tmp, e))?;
        std::fs::rename(&tmp, &path).map_err(|e| io(&path, e))
    }

    fn remove_file(&self, id: &str) -> Result<(), AppError> {
        let path = self.file(id);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(AppError::new(ErrorKind::Io, format!("deleting {}: {e}", path.display()))),
        }
    }
}

/// The Secret Service on the session bus, when one answers.
#[cfg(all(unix, not(target_os = "macos")))]
fn system_keyring() -> Option<Arc<CredentialStore>> {
    // No session bus, no Secret Service (a headless machine, CI): do not try to start one.
    std::env::var_os("DBUS_SESSION_BUS_ADDRESS")?;
    opened(zbus_secret_service_keyring_store::Store::new())
}

/// The macOS Keychain.
#[cfg(target_os = "macos")]
fn system_keyring() -> Option<Arc<CredentialStore>> {
    opened(apple_native_keyring_store::keychain::Store::new())
}

/// The Windows Credential Manager.
#[cfg(windows)]
fn system_keyring() -> Option<Arc<CredentialStore>> {
    opened(windows_native_keyring_store::Store::new())
}

/// A store that opened, as the vault keeps it; or `None`, logged.
fn opened<S: keyring_core::api::CredentialStoreApi + Send + Sync + 'static>(
    store: keyring_core::Result<Arc<S>>,
) -> Option<Arc<CredentialStore>> {
    match store {
        Ok(store) => {
            let store: Arc<CredentialStore> = store;
            Some(store)
        }
        Err(e) => {
            log::info!("no system keyring ({e}): remote backends' keys go in user-only files");
            None
        }
    }
}

fn missing(id: &str, why: &str) -> AppError {
    AppError::new(
        ErrorKind::InvalidArgument,
        format!("the API key of backend {id} cannot be read ({why}); enter it again in Settings › Backends"),
    )
}
