//! The reference plan-mode state machine and its pure helpers.

pub mod allowed_prompts;
pub mod mailbox;
pub mod policy;
pub mod slug;
