//! Errors of running commands on nodes.

/// Failed to reach a node or run a command on it.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// The SSH master connection could not be set up.
    #[error("Failed to connect to `{host}` over SSH")]
    Connect {
        /// e.g. `node0`.
        host: String,
        /// What openssh reported.
        #[source]
        source: openssh::Error,
    },
    /// A command could not be started or its output could not be read.
    #[error("Failed to run `{command}` on `{host}`")]
    Run {
        /// e.g. `node0` or `local`.
        host: String,
        /// The command as shown to people (secrets masked).
        command: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A command failed at the SSH layer (the connection dropped, the master died).
    #[error("Failed to run `{command}` on `{host}`: the SSH session failed")]
    Session {
        /// e.g. `node0`.
        host: String,
        /// The command as shown to people (secrets masked).
        command: String,
        /// What openssh reported.
        #[source]
        source: openssh::Error,
    },
    /// A command ran past its bound and was given up (its process on the node killed
    /// with it where the node has `timeout`).
    #[error("Failed to run `{command}` on `{host}`: no answer within {seconds} s")]
    Timeout {
        /// e.g. `node0`.
        host: String,
        /// The command as shown to people (secrets masked).
        command: String,
        /// How long it was given.
        seconds: u64,
    },
    /// A file could not be written; nothing was changed.
    #[error("Failed to write `{path}` on `{host}`: {message}")]
    WriteFile {
        /// e.g. `node0`.
        host: String,
        /// The file as named, e.g. `/usr/lib/python3.12/sitecustomize.py`.
        path: String,
        /// What the node said, e.g. `refusing `/var/tmp/cuda-upgrade`: it is owned by uid 1000`.
        message: String,
    },
    /// A file could not be read.
    #[error("Failed to read `{path}` on `{host}`: {message}")]
    ReadFile {
        /// e.g. `node0`.
        host: String,
        /// e.g. `/usr/lib/python3.12/sitecustomize.py`.
        path: String,
        /// What the node said.
        message: String,
    },
}

impl TransportError {
    /// `command` could not be started on `host`, or its output not read.
    pub fn run(host: &str, command: &super::NodeCommand, source: std::io::Error) -> Self {
        TransportError::Run {
            host: host.to_string(),
            command: command.display(),
            source,
        }
    }
}
