"""Template tags of the chart layer (see :mod:`console.dashboards.charts`).

``{% chart spec %}`` renders ``dashboards/_chart.html``: a ``<figure id="<id>">`` with the
caption (none with ``{% chart spec caption=False %}``, for a card whose heading names the
chart), a "simulated data" badge when the spec says so, the container that
``static/console/charts.js`` draws into and the spec as ``json_script`` (id ``<id>-data``).

``{% range_switch current %}`` renders the 6 h / 24 h / 7 d links (``?range=``), keeping the
page's other query parameters.
"""

from django import template

from console.dashboards.charts import RANGES

register = template.Library()


@register.inclusion_tag("dashboards/_chart.html")
def chart(spec: dict, caption: bool = True) -> dict:
    """Context of one chart: the spec and the id of its data script. ``caption=False`` for
    a chart alone in a card whose heading already names it: the title is not printed again
    under the heading (it stays the figure's accessible label; the "simulated data" badge
    stays)."""
    return {"spec": spec, "data_id": f"{spec['id']}-data", "caption": caption}


@register.inclusion_tag("dashboards/_range_switch.html", takes_context=True)
def range_switch(context, current: str) -> dict:
    """Links to the same page with each range of :data:`RANGES` (``current`` marked)."""
    request = context.get("request")
    links = []
    for key in RANGES:
        query = request.GET.copy() if request is not None else None
        if query is not None:
            query.pop("fragment", None)
            query["range"] = key
        links.append(
            (
                key,
                "?" + (query.urlencode() if query is not None else f"range={key}"),
                key == current,
            )
        )
    return {"links": links}
