# The console's image: web (gunicorn), Celery worker and beat, and `manage.py` (migrations).
# It runs as an unprivileged user (uid/gid 10001, the runAsUser of deploy/base) and needs no
# writable root: Python writes no bytecode, temporary files go to /tmp (a volume).
FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    HOME=/tmp \
    DJANGO_SETTINGS_MODULE=console.settings.base
WORKDIR /app
# The sources and pyproject.toml; .dockerignore leaves out tests, docs, deploy and local state.
COPY . .
RUN pip install --no-cache-dir . \
    && groupadd --gid 10001 console \
    && useradd --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin console
# Static files are served by WhiteNoise from the app folders (WHITENOISE_USE_FINDERS).
USER 10001:10001
EXPOSE 8000
CMD ["gunicorn", "console.wsgi", "--bind=0.0.0.0:8000", "--workers=3", "--access-logfile=-"]
