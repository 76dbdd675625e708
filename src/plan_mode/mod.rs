//! The reference plan-mode state machine and its pure helpers.

pub mod allowed_prompts;
pub mod mailbox;
pub mod policy;
pub mod quality;
pub mod slug;

pub use allowed_prompts::{AllowedPrompt, GrantSet};
pub use mailbox::{Mailbox, MailboxReader, TeamApproval};
pub use policy::{PlanPolicy, Suggestion};
pub use quality::{assess as assess_plan, PlanInput, PlanReport};
pub use slug::PlanFiles;
