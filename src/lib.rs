pub mod plan_mode;
