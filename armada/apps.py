from django.apps import AppConfig


class ArmadaConfig(AppConfig):
    name = "armada"
    verbose_name = "Armada"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        import logging

        from django.conf import settings

        import armada.api.schema_auth  # noqa: F401 (describes authentication in the schema)
        import armada.lookups  # noqa: F401 (registers the ``__any`` lookup)
        from armada.metrics import register_collectors
        from armada.services.anonymous import warn_if_anonymous_groups
        from armada.web.metrics_access import serve_metrics_if_configured

        register_collectors()
        serve_metrics_if_configured()  # only with ARMADA_METRICS_ADDR
        warn_if_anonymous_groups()
        retry = settings.ARMADA.scheduling.retry_policy
        if retry.enabled and retry.global_max_retries == 0:
            logging.getLogger("armada").warning(
                "retry policies are enabled with scheduling.retryPolicy.globalMaxRetries 0: "
                "the kill switch is on, and no job will be retried whatever its policy says"
            )
