-- Which version of a preset new jobs get when they name none (issue 14). Presets stay immutable:
-- rolling a preset back means choosing an earlier version here, never editing a published one.
-- No row, or a null version: the latest loaded version. Every change is kept with who and when.
CREATE TABLE preset_defaults (
    preset_id text        PRIMARY KEY,
    version   integer,
    set_by    text        NOT NULL,
    reason    text,
    set_at    timestamptz NOT NULL,
    FOREIGN KEY (preset_id, version) REFERENCES preset_versions (preset_id, version)
);

CREATE TABLE preset_default_changes (
    change_id        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    preset_id        text        NOT NULL,
    version          integer,
    previous_version integer,
    set_by           text        NOT NULL,
    reason           text,
    set_at           timestamptz NOT NULL
);
CREATE INDEX preset_default_changes_preset ON preset_default_changes (preset_id, change_id);
