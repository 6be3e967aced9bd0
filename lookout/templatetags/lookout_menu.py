"""``{% main_menu %}``: the links of Lookout's main menu that open for the viewer (each
page's own check, ``lookout.access``), the current page marked."""

from __future__ import annotations

from typing import Any

from django import template

from lookout.access import MENU

register = template.Library()


@register.inclusion_tag("lookout/_menu.html", takes_context=True)
def main_menu(context: template.Context) -> dict[str, Any]:
    request = context.get("request")
    if request is None:
        return {"links": []}
    match = getattr(request, "resolver_match", None)
    here = match.url_name if match is not None and match.namespace == "lookout" else None
    return {
        "links": [
            {"label": page.label, "href": page.href, "current": here in page.current}
            for page in MENU
            if page.opens_for(request)
        ]
    }
