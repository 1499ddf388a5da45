-- v2: users get an age.
ALTER TABLE user_info ADD COLUMN age INTEGER;
