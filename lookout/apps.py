from django.apps import AppConfig


class LookoutConfig(AppConfig):
    name = "lookout"
    verbose_name = "Lookout"
