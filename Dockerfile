FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml ./
COPY console ./console
COPY core ./core
COPY scheduling ./scheduling
COPY telemetry ./telemetry
COPY tenants ./tenants
COPY templates ./templates
COPY static ./static
COPY manage.py ./
RUN pip install --no-cache-dir .
# Static files are served by WhiteNoise from the app folders (WHITENOISE_USE_FINDERS).
ENV DJANGO_SETTINGS_MODULE=console.settings.base
EXPOSE 8000
