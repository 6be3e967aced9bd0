from django.apps import AppConfig


class ArmadaConfig(AppConfig):
    name = "armada"
    verbose_name = "Armada"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from armada.metrics import register_collectors

        register_collectors()
