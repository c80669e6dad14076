from django.urls import path

from console.dashboards import views

app_name = "dashboards"
urlpatterns = [
    path("", views.overview, name="overview"),
]
