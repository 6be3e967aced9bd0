"""The ``auth`` section of the configuration: who gets the global permissions, how callers
without credentials are served, and how long API tokens live (``core.config`` re-exports
these names)."""

from __future__ import annotations

from pydantic import Field, StrictBool, field_validator, model_validator

from armada.core.config_types import Duration, Strict

PERMISSION_CODENAMES = (
    "submit_any_jobs",
    "cancel_any_jobs",
    "preempt_any_jobs",
    "reprioritize_any_jobs",
    "watch_all_events",
    "create_queue",
    "delete_queue",
    "cordon_queue",
    "create_retry_policy",
    "update_retry_policy",
    "delete_retry_policy",
    "update_executor_settings",
    "manage_executor_credentials",
)


class Auth(Strict):
    permission_group_mapping: dict[str, list[str]] = Field(
        default_factory=dict, alias="permissionGroupMapping"
    )
    # Callers of Armada's wire API (gRPC and the /v1 gateway) who send no credentials are
    # served as Django's AnonymousUser instead of refused (UNAUTHENTICATED / 401).
    anonymous_auth: StrictBool = Field(False, alias="anonymousAuth")
    # With anonymousAuth, such callers count as members of these groups: they get the
    # global permissions the groups hold and what queues grant the groups (a development
    # set-up's "everyone may do everything"). Every process warns at start while it is set.
    anonymous_groups: list[str] = Field(default_factory=list, alias="anonymousGroups")
    # API tokens (``services.tokens``): the life of one made without an expiry (0: it never
    # expires), and the longest life one may be given (0: no maximum but ten years).
    token_lifetime: Duration = Field(90 * 86400.0, alias="tokenLifetime", ge=0)
    token_max_lifetime: Duration = Field(365 * 86400.0, alias="tokenMaxLifetime", ge=0)

    @field_validator("anonymous_groups")
    @classmethod
    def _group_names(cls, v: list[str]) -> list[str]:
        for name in v:
            if not name.strip() or len(name) > 150:
                raise ValueError(f"group name {name!r} must be 1 to 150 characters")
        return v

    @model_validator(mode="after")
    def _groups_need_anonymous_auth(self) -> Auth:
        if self.anonymous_groups and not self.anonymous_auth:
            raise ValueError(
                "anonymousGroups: needs anonymousAuth: true (without it they do nothing)"
            )
        return self

    @model_validator(mode="after")
    def _token_lifetime_within_the_maximum(self) -> Auth:
        most = self.token_max_lifetime
        if most and not self.token_lifetime:
            raise ValueError(
                "tokenLifetime: 0 (tokens that never expire) needs tokenMaxLifetime: 0"
            )
        if most and self.token_lifetime > most:
            raise ValueError("tokenLifetime: must be at most tokenMaxLifetime")
        return self

    @field_validator("permission_group_mapping")
    @classmethod
    def _known_codenames(cls, v: dict[str, list[str]]) -> dict[str, list[str]]:
        unknown = sorted(set(v) - set(PERMISSION_CODENAMES))
        if unknown:
            raise ValueError(
                f"unknown permission(s) {', '.join(unknown)}; known: {', '.join(PERMISSION_CODENAMES)}"
            )
        return v
