-- The sample bundle at version 3, for creating new accounts in one step.
-- accountd checks at load that this builds the same schema as migrations 0001..0003.
CREATE TABLE user_info (
  user_id INTEGER PRIMARY KEY,
  user_name TEXT,
  age INTEGER,
  sex TEXT
);

CREATE TABLE app_data (
  key TEXT PRIMARY KEY NOT NULL,
  value TEXT
);
