-- v3: users get a sex, and the app keeps its own data.
ALTER TABLE user_info ADD COLUMN sex TEXT;

CREATE TABLE app_data (
  key TEXT PRIMARY KEY NOT NULL,
  value TEXT
);
